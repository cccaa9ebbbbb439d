#!/usr/bin/env python3
"""Writes fuzz/IDToken/seeds: ID tokens signed with fuzz/IDToken/keys, valid at the harness's
fixed clock (1700000000), a few refused ones, a key set and provider flags. Run with the
project's .venv (scripts/python-env.sh): python fuzz/IDToken/make-seeds.py"""
import base64
import hashlib
import json
import os

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

here = os.path.dirname(os.path.abspath(__file__))
NOW = 1_700_000_000


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def load(name):
    with open(os.path.join(here, "keys", name), "rb") as f:
        return serialization.load_pem_private_key(f.read(), password=None)


rsa_key, ec_key = load("rsa.pem"), load("ec.pem")


def sign(header, claims):
    signing_input = (b64url(json.dumps(header, separators=(",", ":")).encode()) + "."
                     + b64url(json.dumps(claims, separators=(",", ":")).encode()))
    if header.get("alg") == "ES256":
        r, s = decode_dss_signature(ec_key.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        signature = r.to_bytes(32, "big") + s.to_bytes(32, "big")
    else:
        signature = rsa_key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
    return signing_input + "." + b64url(signature)


def claims(**changes):
    c = {"iss": "https://idp.example", "sub": "user-1", "aud": "app", "iat": NOW - 10, "exp": NOW + 600,
         "email": "a@example.org", "email_verified": "true"}
    c.update(changes)
    return c


rsa_header = {"alg": "RS256", "kid": "rsa-1", "typ": "JWT"}
ec_header = {"alg": "ES256", "kid": "ec-1"}
nonce_hash = hashlib.sha256(b"fuzz-nonce").hexdigest()
seeds = {
    "rs256-valid": sign(rsa_header, claims()),
    "es256-valid": sign(ec_header, claims(aud=["web", "other"])),
    "rs256-nonce-hash": sign(rsa_header, claims(nonce=nonce_hash)),
    "es256-nonce-plain": sign(ec_header, claims(nonce="fuzz-nonce", nbf=NOW - 5)),
    "rs256-expired": sign(rsa_header, claims(exp=NOW - 100)),
    "es256-kid-of-rsa": sign({"alg": "ES256", "kid": "rsa-1"}, claims()),
    "alg-none": b64url(b'{"alg":"none","kid":"rsa-1"}') + "." + b64url(json.dumps(claims()).encode()) + ".",
}
numbers = rsa_key.public_key().public_numbers()
point = ec_key.public_key().public_numbers()
seeds["jwks"] = json.dumps({"keys": [
    {"kty": "RSA", "kid": "rsa-1", "alg": "RS256", "use": "sig",
     "n": b64url(numbers.n.to_bytes(256, "big")), "e": b64url(numbers.e.to_bytes(3, "big"))},
    {"kty": "EC", "kid": "ec-1", "crv": "P-256", "x": b64url(point.x.to_bytes(32, "big")), "y": b64url(point.y.to_bytes(32, "big"))},
    {"kty": "oct", "kid": "h", "k": "c2VjcmV0"}]})
seeds["provider-flag"] = "name=google,issuer=https://accounts.google.com,audience=a.apps.googleusercontent.com;b,jwks=https://www.googleapis.com/oauth2/v3/certs"
seeds["provider-flag-file"] = "jwks=/etc/kidledger/jwks.json,audience=x,issuer=https://auth.example/realms/a,b,name=kc"

os.makedirs(os.path.join(here, "seeds"), exist_ok=True)
for name, text in seeds.items():
    with open(os.path.join(here, "seeds", name), "w") as f:
        f.write(text)
