#!/usr/bin/env python3
"""Cross-check of IDTokenKit's ID token verification against PyJWT.

Makes keys here (Python `cryptography`; the 512-bit one with the openssl command, which
`cryptography` will not generate), writes a key set file, and signs every variant of an ID
token the verifier must accept or refuse: valid RS256 and ES256 tokens, forgeries (another
key, alg none, HS256 keyed with the RSA public key, a kid of a key pinned to another
algorithm, a 512-bit key, tampering, signatures of the wrong length or encoding), claims
out of bounds (expired, iat/nbf in the future, wrong iss/aud, missing claims), nonces
(SHA-256 or plain, missing, wrong, reused) and malformed input. Then it asks both sides:

* IDTokenKit through `idtoken-check` (one run over all variants, in order);
* PyJWT 2 (`jwt.decode` with the key the token's kid names from `PyJWKSet`, algorithms
  RS256 and ES256, the issuer, the audiences, 60 s leeway, iss/sub/aud/exp/iat required,
  `enforce_minimum_key_length`), plus the API's nonce rule, which PyJWT does not have.

PyJWT's exceptions map to the API's reasons: InvalidAlgorithmError → unsupported_algorithm,
no key for the kid or InvalidKeyError (key too short) → unknown_key, InvalidSignatureError →
signature, InvalidIssuerError → issuer, InvalidAudienceError → audience,
ExpiredSignatureError → expired, ImmatureSignatureError → not_yet_valid, any other
DecodeError/InvalidTokenError (missing claim included) → malformed.

Each variant states the expected verdict; it passes when both sides give it. A few variants
are refused by IDTokenKit only, where it is stricter than PyJWT on purpose (base64url
padding, duplicate JSON members, tokens over 16 KiB, an empty sub, a numeric string for
exp, any crit header); those pass when IDTokenKit refuses and PyJWT gives the stated verdict.

Usage: jwt-peer.py IDTOKEN_CHECK_BINARY. One line per variant, then
`jwt-peer: N passed, N failed`; exit status 1 on any failure.
"""
import base64
import hashlib
import hmac
import json
import os
import subprocess
import sys
import tempfile
import time

import jwt
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

ISSUER = "https://idp.example.org/realms/family"
AUDIENCES = ["ledger-ios", "ledger-web"]
LEEWAY = 60


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def int_bytes(n: int) -> bytes:
    return n.to_bytes((n.bit_length() + 7) // 8, "big")


class Key:
    def __init__(self, private, kid, alg):
        self.private, self.kid, self.alg = private, kid, alg

    def jwk(self, with_alg=True):
        numbers = self.private.public_key().public_numbers()
        if self.alg == "RS256":
            jwk = {"kty": "RSA", "kid": self.kid, "use": "sig", "n": b64url(int_bytes(numbers.n)), "e": b64url(int_bytes(numbers.e))}
        else:
            jwk = {"kty": "EC", "kid": self.kid, "use": "sig", "crv": "P-256",
                   "x": b64url(numbers.x.to_bytes(32, "big")), "y": b64url(numbers.y.to_bytes(32, "big"))}
        if with_alg:
            jwk["alg"] = self.alg
        return jwk

    def public_pem(self) -> bytes:
        return self.private.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)

    def signature(self, message: bytes) -> bytes:
        if self.alg == "RS256":
            return self.private.sign(message, padding.PKCS1v15(), hashes.SHA256())
        r, s = decode_dss_signature(self.private.sign(message, ec.ECDSA(hashes.SHA256())))
        return r.to_bytes(32, "big") + s.to_bytes(32, "big")

    def header(self, **changes):
        header = {"alg": self.alg, "kid": self.kid, "typ": "JWT"}
        for name, value in changes.items():
            if value is None:
                header.pop(name, None)
            else:
                header[name] = value
        return header

    def sign(self, claims, header=None, raw_header=None, raw_payload=None) -> str:
        h = raw_header if raw_header is not None else json.dumps(header or self.header()).encode()
        p = raw_payload if raw_payload is not None else json.dumps(claims).encode()
        signing_input = b64url(h) + "." + b64url(p)
        return signing_input + "." + b64url(self.signature(signing_input.encode()))


def unsigned(header, claims, signature=b"") -> str:
    return b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode()) + "." + b64url(signature)


def hs256(header, claims, secret: bytes) -> str:
    signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(claims).encode())
    return signing_input + "." + b64url(hmac.new(secret, signing_input.encode(), hashlib.sha256).digest())


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def weak_rsa_key(folder) -> rsa.RSAPrivateKey:
    path = os.path.join(folder, "weak.pem")
    subprocess.run(["openssl", "genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:512", "-out", path],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(path, "rb") as f:
        return serialization.load_pem_private_key(f.read(), password=None)


def variants(keys, now):
    """(id, token, nonce, expected, pyjwt_expected or None when it must equal expected)."""
    rsa1, rsa2, ec1, weak = keys["rsa-1"], keys["rsa-2"], keys["ec-1"], keys["weak"]
    evil_rsa = Key(rsa.generate_private_key(65537, 2048), "rsa-1", "RS256")
    evil_ec = Key(ec.generate_private_key(ec.SECP256R1()), "ec-1", "ES256")

    def claims(**changes):
        c = {"iss": ISSUER, "sub": "f3a1c9e0-7d2b-4c55-9a1e-6b0f2d8e4c11", "aud": AUDIENCES[0],
             "iat": now - 10, "exp": now + 600, "email": "parent@example.org", "email_verified": True}
        for name, value in changes.items():
            if value is None:
                c.pop(name, None)
            else:
                c[name] = value
        return c

    def segments(token):
        return token.split(".")

    good = rsa1.sign(claims())
    h, p, s = segments(good)
    out = []
    add = lambda id, token, expected, nonce=None, pyjwt_verdict=None: out.append((id, token, nonce, expected, pyjwt_verdict))

    # Accepted.
    add("rs256", good, "ok")
    add("es256", ec1.sign(claims()), "ok")
    add("rs256-key-without-alg", rsa2.sign(claims()), "ok")
    add("aud-array", rsa1.sign(claims(aud=["someone-else", AUDIENCES[1]])), "ok")
    add("second-audience", ec1.sign(claims(aud=AUDIENCES[1])), "ok")
    add("exp-inside-leeway", rsa1.sign(claims(exp=now - 30)), "ok")
    add("iat-future-inside-leeway", rsa1.sign(claims(iat=now + 30)), "ok")
    add("nbf-future-inside-leeway", ec1.sign(claims(nbf=now + 30)), "ok")
    add("nbf-past", ec1.sign(claims(nbf=now - 3600)), "ok")
    add("exp-fractional", rsa1.sign(claims(exp=now + 600.5)), "ok")
    add("typ-other", rsa1.sign(claims(), header=rsa1.header(typ="at+jwt")), "ok")
    add("typ-absent", ec1.sign(claims(), header=ec1.header(typ=None)), "ok")
    add("jku-x5u-ignored", rsa1.sign(claims(), header=rsa1.header(jku="http://127.0.0.1:9/jwks", x5u="http://127.0.0.1:9/x5u")), "ok")
    add("jwk-header-ignored", rsa1.sign(claims(), header=rsa1.header(jwk=evil_rsa.jwk())), "ok")
    add("unicode-claims", ec1.sign(claims(name="Zoë Ångström 🎉", email_verified="true")), "ok")
    add("old-iat-valid-exp", rsa1.sign(claims(iat=now - 86400)), "ok")
    add("nonce-sha256", rsa1.sign(claims(nonce=sha256_hex("nonce-A"))), "ok", nonce="nonce-A")
    add("nonce-plain", ec1.sign(claims(nonce="nonce-B")), "ok", nonce="nonce-B")
    add("nonce-claim-none-sent", rsa1.sign(claims(nonce=sha256_hex("nonce-C"))), "ok")

    # Forged signatures and algorithms.
    add("wrong-key-rs256", evil_rsa.sign(claims()), "signature")
    add("wrong-key-es256", evil_ec.sign(claims()), "signature")
    add("alg-none-unsigned", unsigned(rsa1.header(alg="none"), claims()), "unsupported_algorithm")
    add("alg-none-signed", rsa1.sign(claims(), header=rsa1.header(alg="none")), "unsupported_algorithm")
    add("alg-missing", rsa1.sign(claims(), header=rsa1.header(alg=None)), "unsupported_algorithm")
    add("hs256-rsa-public-pem", hs256(rsa1.header(alg="HS256"), claims(), rsa1.public_pem()), "unsupported_algorithm")
    add("hs256-rsa-modulus", hs256(rsa1.header(alg="HS256"), claims(),
                                   int_bytes(rsa1.private.public_key().public_numbers().n)), "unsupported_algorithm")
    add("hs256-ec-public-pem", hs256(ec1.header(alg="HS256"), claims(), ec1.public_pem()), "unsupported_algorithm")
    add("rs256-naming-ec-kid", evil_rsa.sign(claims(), header=evil_rsa.header(kid="ec-1")), "unsupported_algorithm")
    add("es256-naming-rsa-kid", evil_ec.sign(claims(), header=evil_ec.header(kid="rsa-1")), "unsupported_algorithm")
    add("rs384", rsa1.sign(claims(), header=rsa1.header(alg="RS384")), "unsupported_algorithm")
    add("ps256", rsa1.sign(claims(), header=rsa1.header(alg="PS256")), "unsupported_algorithm")
    add("weak-512-bit-key", weak.sign(claims()), "unknown_key")
    add("unknown-kid", evil_rsa.sign(claims(), header=evil_rsa.header(kid="rotated-in")), "unknown_key")
    add("missing-kid", rsa1.sign(claims(), header=rsa1.header(kid=None)), "unknown_key")
    add("kid-not-string", rsa1.sign(claims(), header=rsa1.header(kid=7)), "malformed")
    other = b64url(json.dumps(claims(sub="someone-else")).encode())
    add("tampered-payload", ".".join([h, other, s]), "signature")
    add("tampered-header", ".".join([b64url(json.dumps(rsa1.header(typ="jwt")).encode()), p, s]), "signature")
    sig = base64.urlsafe_b64decode(s + "==")
    add("signature-bit-flipped", ".".join([h, p, b64url(sig[:10] + bytes([sig[10] ^ 1]) + sig[11:])]), "signature")
    add("signature-truncated", ".".join([h, p, b64url(sig[:-1])]), "signature")
    add("signature-extended", ".".join([h, p, b64url(sig + b"\0")]), "signature")
    add("signature-empty", h + "." + p + ".", "signature")
    eh, ep, es = segments(ec1.sign(claims()))
    raw = base64.urlsafe_b64decode(es + "==")
    add("es256-signature-65-bytes", ".".join([eh, ep, b64url(raw + b"\0")]), "signature")
    add("es256-signature-63-bytes", ".".join([eh, ep, b64url(raw[:-1])]), "signature")
    der_input = (eh + "." + ep).encode()
    add("es256-signature-der", ".".join([eh, ep, b64url(ec1.private.sign(der_input, ec.ECDSA(hashes.SHA256())))]), "signature")
    add("es256-signature-zero", ".".join([eh, ep, b64url(bytes(64))]), "signature")

    # Claims.
    add("expired", rsa1.sign(claims(exp=now - 120)), "expired")
    add("expired-long-ago", ec1.sign(claims(iat=now - 90000, exp=now - 86400)), "expired")
    add("iat-future", rsa1.sign(claims(iat=now + 300)), "not_yet_valid")
    add("nbf-future", ec1.sign(claims(nbf=now + 300)), "not_yet_valid")
    add("wrong-aud", rsa1.sign(claims(aud="ledger-android")), "audience")
    add("aud-array-without-ours", rsa1.sign(claims(aud=["a", "b"])), "audience")
    add("aud-number", rsa1.sign(claims(aud=5)), "audience")
    add("wrong-iss", rsa1.sign(claims(iss="https://evil.example")), "issuer")
    add("iss-trailing-slash", ec1.sign(claims(iss=ISSUER + "/")), "issuer")
    add("iss-number", ec1.sign(claims(iss=5)), "issuer")
    for claim in ["iss", "sub", "aud", "exp", "iat"]:
        add(f"missing-{claim}", rsa1.sign(claims(**{claim: None})), "malformed")
    add("exp-not-a-number", rsa1.sign(claims(exp="soon")), "malformed")
    add("sub-not-a-string", rsa1.sign(claims(sub=5)), "malformed")

    # Nonces.
    first = rsa1.sign(claims(nonce=sha256_hex("nonce-D")))
    add("nonce-first-use", first, "ok", nonce="nonce-D")
    add("nonce-reused", first, "nonce", nonce="nonce-D")
    add("nonce-reused-other-token", ec1.sign(claims(nonce="nonce-D")), "nonce", nonce="nonce-D")
    add("nonce-missing-claim", rsa1.sign(claims()), "nonce", nonce="nonce-E")
    add("nonce-wrong", rsa1.sign(claims(nonce=sha256_hex("nonce-F"))), "nonce", nonce="nonce-G")
    add("nonce-hash-uppercase", rsa1.sign(claims(nonce=sha256_hex("nonce-H").upper())), "nonce", nonce="nonce-H")

    # Malformed.
    add("two-segments", h + "." + p, "malformed")
    add("four-segments", good + "." + s, "malformed")
    add("header-not-json", b64url(b"not json") + "." + p + "." + s, "malformed")
    add("header-array", b64url(b'["RS256"]') + "." + p + "." + s, "malformed")
    add("payload-not-json", rsa1.sign(None, raw_payload=b"not json"), "malformed")
    add("payload-array", rsa1.sign(None, raw_payload=b'["a"]'), "malformed")
    add("crit-unknown", rsa1.sign(claims(), header=rsa1.header(crit=["exp"], exp=1)), "malformed")
    add("crit-and-alg-none", unsigned(rsa1.header(alg="none", crit=["exp"], exp=1), claims()), "malformed")
    add("not-base64", "!!!!." + p + "." + s, "malformed")
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    add("noncanonical-trailing-bits", h + "." + p + "." + s[:-1] + alphabet[alphabet.index(s[-1]) | 1], "malformed")
    add("standard-alphabet", h + "." + p + "." + s.replace("-", "+").replace("_", "/"),
        "malformed" if ("-" in s or "_" in s) else "ok")

    # IDTokenKit is stricter than PyJWT here, on purpose.
    add("stricter-padded-signature", good + "==", "malformed", pyjwt_verdict="ok")
    dup = ('{"iss":"https://evil.example","sub":"x","aud":"%s","exp":%d,"iat":%d,"iss":"%s"}'
           % (AUDIENCES[0], now + 600, now - 10, ISSUER)).encode()
    add("stricter-duplicate-claim", rsa1.sign(None, raw_payload=dup), "malformed", pyjwt_verdict="ok")
    dup_header = ('{"alg":"RS256","kid":"nobody","kid":"rsa-1"}').encode()
    add("stricter-duplicate-header-member", rsa1.sign(claims(), raw_header=dup_header), "malformed", pyjwt_verdict="ok")
    add("stricter-over-16-kib", rsa1.sign(claims(pad="A" * 17000)), "malformed", pyjwt_verdict="ok")
    add("stricter-empty-sub", rsa1.sign(claims(sub="")), "malformed", pyjwt_verdict="ok")
    add("stricter-exp-numeric-string", rsa1.sign(claims(exp=str(now + 600))), "malformed", pyjwt_verdict="ok")
    add("stricter-crit-b64", rsa1.sign(claims(), header=rsa1.header(crit=["b64"], b64=True)), "malformed", pyjwt_verdict="ok")
    return out


def pyjwt_verdict(token, nonce, key_set, used):
    try:
        header = jwt.get_unverified_header(token)
    except jwt.InvalidTokenError:
        return "malformed"
    kid = header.get("kid")
    key = next((k for k in key_set.keys if kid is not None and k.key_id == kid), None)
    if key is None:
        return "unknown_key"
    try:
        claims = jwt.decode(token, key, algorithms=["RS256", "ES256"], audience=AUDIENCES, issuer=ISSUER, leeway=LEEWAY,
                            options={"require": ["iss", "sub", "aud", "exp", "iat"], "enforce_minimum_key_length": True})
    except jwt.InvalidAlgorithmError:
        return "unsupported_algorithm"
    except jwt.InvalidKeyError:
        return "unknown_key"
    except jwt.InvalidSignatureError:
        return "signature"
    except jwt.InvalidIssuerError:
        return "issuer"
    except jwt.InvalidAudienceError:
        return "audience"
    except jwt.ExpiredSignatureError:
        return "expired"
    except jwt.ImmatureSignatureError:
        return "not_yet_valid"
    except jwt.InvalidTokenError:
        return "malformed"
    if nonce is not None:
        claim = claims.get("nonce")
        digest = sha256_hex(nonce)
        if not isinstance(claim, str) or claim not in (digest, nonce) or digest in used:
            return "nonce"
        used.add(digest)
    return "ok"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: jwt-peer.py IDTOKEN_CHECK_BINARY")
    check = sys.argv[1]
    with tempfile.TemporaryDirectory() as folder:
        keys = {
            "rsa-1": Key(rsa.generate_private_key(65537, 2048), "rsa-1", "RS256"),
            "rsa-2": Key(rsa.generate_private_key(65537, 3072), "rsa-2", "RS256"),
            "ec-1": Key(ec.generate_private_key(ec.SECP256R1()), "ec-1", "ES256"),
            "weak": Key(weak_rsa_key(folder), "weak", "RS256"),
        }
        key_set = {"keys": [keys["rsa-1"].jwk(), keys["rsa-2"].jwk(with_alg=False), keys["ec-1"].jwk(with_alg=False),
                            keys["weak"].jwk()]}
        jwks_path = os.path.join(folder, "jwks.json")
        with open(jwks_path, "w") as f:
            json.dump(key_set, f)
        py_key_set = jwt.PyJWKSet.from_dict(key_set)

        cases = variants(keys, int(time.time()))
        cases_path = os.path.join(folder, "cases.jsonl")
        with open(cases_path, "w") as f:
            for id, token, nonce, _, _ in cases:
                f.write(json.dumps({"id": id, "token": token, **({"nonce": nonce} if nonce is not None else {})}) + "\n")
        spec = f"name=peer,issuer={ISSUER},audience={';'.join(AUDIENCES)},jwks={jwks_path}"
        run = subprocess.run([check, "--oidc-provider", spec, cases_path], capture_output=True, text=True)
        if run.returncode != 0:
            print(run.stderr, end="")
            print(f"jwt-peer: 0 passed, {len(cases)} failed")
            sys.exit(1)
        swift = {}
        for line in run.stdout.splitlines():
            answer = json.loads(line)
            swift[answer["id"]] = answer["verdict"]

        used = set()
        passed = failed = 0
        for id, token, nonce, expected, pyjwt_expected in cases:
            ours = swift.get(id, "(no verdict)")
            theirs = pyjwt_verdict(token, nonce, py_key_set, used)
            ok = ours == expected and theirs == (pyjwt_expected or expected)
            passed, failed = passed + ok, failed + (not ok)
            note = "" if pyjwt_expected is None else " (IDTokenKit stricter)"
            print(f"{'ok  ' if ok else 'FAIL'} {id}: expected {expected}, IDTokenKit {ours}, PyJWT {theirs}{note}")
        print(f"jwt-peer: {passed} passed, {failed} failed")
        sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
