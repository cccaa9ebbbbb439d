#!/usr/bin/env python3
"""Peer check of the App Store endpoints against independent implementations.

Generates a test certificate chain shaped like the App Store's (Python `cryptography`: a
root, an intermediate and a leaf with Apple's marker OIDs, and the forged variants), starts
kidledger-server (loopback, temporary data folder) trusting that root, then:
1. signs App Store Server Notifications V2 here with the chain's leaf key — every
   notification type, forgeries of every kind, a replay — posts each to
   POST /v1/app-store/notifications and asks Apple's own `SignedDataVerifier`
   (app-store-server-library) for its verdict on the same bytes. The two must agree: both
   accept, or both refuse for the same reason (app identifier, environment, or the
   signature/chain). Checks that are this server's business rules and not Apple's
   (product, renewal of another purchase) must be refused by the server and accepted by
   Apple's verifier.
2. gets an entitlement token and verifies it with PyJWT against GET /v1/entitlement-keys.

Usage: app-store-peer.py SERVER_BINARY. Prints one line per check and ends
with `N passed, N failed`; exits 1 on any failure.
"""
import base64
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

import jwt
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier, VerificationException

BUNDLE = "com.example.kidledger"
APP_APPLE_ID = 1234567890
PRODUCT = "pro.yearly"
DAY = 86_400_000


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# Apple's marker extensions (intermediate, App Store signing leaf) and the wrong ones of the forgeries.
INTERMEDIATE_OID, LEAF_OID = "1.2.840.113635.100.6.2.1", "1.2.840.113635.100.6.11.1"
INVALID_INTERMEDIATE_OID, INVALID_LEAF_OID = "1.2.840.113635.100.6.2.2", "1.2.840.113635.100.6.11.2"
NOT_BEFORE = datetime.datetime(2023, 1, 1, tzinfo=datetime.timezone.utc)
NOT_AFTER = datetime.datetime(2049, 12, 31, 23, 59, 59, tzinfo=datetime.timezone.utc)


class Chain:
    """A root → intermediate → leaf chain generated here, valid 2023-01-01 … 2049-12-31."""

    def __init__(self):
        new_key = lambda: ec.generate_private_key(ec.SECP256R1())
        root_key, intermediate_key, other_intermediate_key = new_key(), new_key(), new_key()
        self.key = new_key()
        self.foreign = new_key()

        def certificate(serial, name, key, issuer, issuer_key, ca, oid=None):
            subject = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "kidledger tests"),
                                 x509.NameAttribute(NameOID.COMMON_NAME, name)])
            builder = (x509.CertificateBuilder().subject_name(subject)
                       .issuer_name(subject if issuer is None else issuer.subject)
                       .public_key(key.public_key()).serial_number(serial)
                       .not_valid_before(NOT_BEFORE).not_valid_after(NOT_AFTER)
                       .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca and issuer else None), critical=True)
                       .add_extension(x509.KeyUsage(digital_signature=not ca, content_commitment=False, key_encipherment=False,
                                                    data_encipherment=False, key_agreement=False, key_cert_sign=ca,
                                                    crl_sign=ca, encipher_only=False, decipher_only=False), critical=True)
                       .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False))
            if issuer is not None:
                builder = builder.add_extension(
                    x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
            if oid:
                # The marker's value is an ASN.1 NULL, as in Apple's certificates.
                builder = builder.add_extension(x509.UnrecognizedExtension(x509.ObjectIdentifier(oid), b"\x05\x00"), critical=False)
            return builder.sign(issuer_key or key, hashes.SHA256())

        root = certificate(1, "kidledger test root", root_key, None, None, True)
        intermediate = certificate(2, "kidledger test intermediate", intermediate_key, root, root_key, True, INTERMEDIATE_OID)
        leaf = certificate(4, "kidledger test App Store signing", self.key, intermediate, intermediate_key, False, LEAF_OID)
        invalid_leaf = certificate(5, "kidledger test leaf, wrong OID", self.key, intermediate, intermediate_key, False,
                                   INVALID_LEAF_OID)
        invalid_intermediate = certificate(3, "kidledger test intermediate, wrong OID", other_intermediate_key, root, root_key,
                                           True, INVALID_INTERMEDIATE_OID)
        leaf_of_invalid = certificate(6, "kidledger test leaf of the wrong-OID intermediate", self.key, invalid_intermediate,
                                      other_intermediate_key, False, LEAF_OID)

        self.root_der = root.public_bytes(serialization.Encoding.DER)
        self.root_pem = root.public_bytes(serialization.Encoding.PEM)
        b = lambda c: base64.b64encode(c.public_bytes(serialization.Encoding.DER)).decode()
        self.x5c = [b(leaf), b(intermediate), b(root)]
        self.invalid_oid_leaf = [b(invalid_leaf), self.x5c[1], self.x5c[2]]
        self.invalid_oid_intermediate = [b(leaf_of_invalid), b(invalid_intermediate), self.x5c[2]]

    def sign(self, payload: dict, key=None, x5c=None, alg="ES256") -> str:
        header = {"alg": alg, "typ": "JWT", "x5c": self.x5c if x5c is None else x5c}
        signing_input = b64url(json.dumps(header).encode()) + "." + b64url(json.dumps(payload).encode())
        der = (key or self.key).sign(signing_input.encode(), ec.ECDSA(hashes.SHA256()))
        r, s = decode_dss_signature(der)
        return signing_input + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def transaction(owner, original, signed, expires, **changes):
    t = {"transactionId": f"{original}-{signed}", "originalTransactionId": original, "bundleId": BUNDLE,
         "productId": PRODUCT, "purchaseDate": signed - DAY, "originalPurchaseDate": signed - 30 * DAY,
         "expiresDate": expires, "signedDate": signed, "environment": "Production",
         "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED", "appAccountToken": owner, "quantity": 1}
    t.update(changes)
    return {k: v for k, v in t.items() if v is not None}


def renewal(original, signed, **changes):
    r = {"originalTransactionId": original, "productId": PRODUCT, "autoRenewProductId": PRODUCT, "autoRenewStatus": 1,
         "isInBillingRetryPeriod": False, "signedDate": signed, "environment": "Production"}
    r.update(changes)
    return {k: v for k, v in r.items() if v is not None}


def notification(kind, signed, tx, rn, subtype=None, status=1, **data_changes):
    data = {"appAppleId": APP_APPLE_ID, "bundleId": BUNDLE, "bundleVersion": "1.0", "environment": "Production", "status": status}
    if tx is not None:
        data["signedTransactionInfo"] = tx
    if rn is not None:
        data["signedRenewalInfo"] = rn
    data.update(data_changes)
    n = {"notificationType": kind, "notificationUUID": str(uuid.uuid4()), "version": "2.0", "signedDate": signed,
         "data": {k: v for k, v in data.items() if v is not None}}
    if subtype:
        n["subtype"] = subtype
    return n


class Server:
    def __init__(self, binary: str, chain: Chain):
        self.dir = tempfile.mkdtemp(prefix="kidledger-peer-")
        root = os.path.join(self.dir, "test-root.pem")
        with open(root, "wb") as f:
            f.write(chain.root_pem)
        args = [binary, "serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", os.path.join(self.dir, "data"),
                "--bundle-id", BUNDLE, "--product-id", PRODUCT, "--environment", "Production",
                "--app-apple-id", str(APP_APPLE_ID), "--trusted-root", root,
                "--notifications-per-minute", "100000", "--log-level", "warning"]
        self.process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self.port = None
        for line in self.process.stdout:
            event = json.loads(line)
            if event.get("event") == "listening":
                self.port = event["port"]
                break
        if self.port is None:
            raise SystemExit("the server did not start")

    def call(self, method, path, body=None, token=None):
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method=method,
                                         data=None if body is None else json.dumps(body).encode())
        if body is not None:
            request.add_header("Content-Type", "application/json")
        if token:
            request.add_header("Authorization", "Bearer " + token)
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        subprocess.run(["rm", "-rf", self.dir], check=False)


def apple_verdict(verifier, signed_payload):
    """OK, or the VerificationStatus name of Apple's first refusal (outer, then transaction, then renewal)."""
    try:
        n = verifier.verify_and_decode_notification(signed_payload)
        if n.data and n.data.signedTransactionInfo:
            verifier.verify_and_decode_signed_transaction(n.data.signedTransactionInfo)
        if n.data and n.data.signedRenewalInfo:
            verifier.verify_and_decode_renewal_info(n.data.signedRenewalInfo)
        return "OK"
    except VerificationException as e:
        return e.status.name


# What each refusal means, on either side.
SERVER_REASON = {"wrong_bundle": "app", "wrong_app_apple_id": "app", "wrong_environment": "environment",
                 "invalid_chain": "signature", "invalid_signature": "signature", "unsupported_algorithm": "signature",
                 "malformed": "signature"}
APPLE_REASON = {"INVALID_APP_IDENTIFIER": "app", "INVALID_ENVIRONMENT": "environment"}


def main():
    binary = sys.argv[1]
    chain = Chain()
    verifier = SignedDataVerifier([chain.root_der], False, Environment.PRODUCTION, BUNDLE, APP_APPLE_ID)
    server = Server(binary, chain)
    passed = failed = 0

    def check(name, ok, detail=""):
        nonlocal passed, failed
        passed, failed = passed + (1 if ok else 0), failed + (0 if ok else 1)
        print(("ok      " if ok else "FAILED  ") + name + ("" if ok else "  " + detail))

    try:
        now = int(time.time() * 1000)
        owner = str(uuid.uuid4())
        signed = now - DAY
        variants = []  # (name, signedPayload, business-rule code or None)

        def good(kind, original, subtype=None, status=1, **tx_changes):
            tx = chain.sign(transaction(owner, original, signed, now + 30 * DAY, **tx_changes))
            rn = chain.sign(renewal(original, signed))
            return chain.sign(notification(kind, signed, tx, rn, subtype=subtype, status=status))

        for i, (kind, subtype, changes) in enumerate([
                ("SUBSCRIBED", "INITIAL_BUY", {}), ("DID_RENEW", None, {}), ("DID_RENEW", "BILLING_RECOVERY", {}),
                ("DID_FAIL_TO_RENEW", None, {}), ("DID_FAIL_TO_RENEW", "GRACE_PERIOD", {}), ("GRACE_PERIOD_EXPIRED", None, {}),
                ("EXPIRED", "VOLUNTARY", {}), ("REFUND", None, {"revocationDate": now - 1000, "revocationReason": 0}),
                ("REFUND_REVERSED", None, {}), ("REVOKE", None, {"revocationDate": now - 1000}),
                ("DID_CHANGE_RENEWAL_STATUS", "AUTO_RENEW_DISABLED", {}), ("DID_CHANGE_RENEWAL_PREF", "UPGRADE", {}),
                ("OFFER_REDEEMED", "UPGRADE", {}), ("RENEWAL_EXTENDED", None, {}), ("PRICE_INCREASE", "ACCEPTED", {})]):
            variants.append((f"genuine {kind} {subtype or ''}".strip(), good(kind, f"9{i:015d}", subtype, **changes), None))
        variants.append(("genuine TEST", chain.sign(notification("TEST", signed, None, None, status=None)), None))

        original = "8000000000000001"
        tx = transaction(owner, original, signed, now + 30 * DAY)
        rn = renewal(original, signed)
        base = notification("DID_RENEW", signed, chain.sign(tx), chain.sign(rn))
        genuine = chain.sign(base)
        head, body, signature = genuine.split(".")
        tampered = dict(base, notificationType="REFUND_REVERSED")

        def with_data(**changes):
            return chain.sign(dict(base, data={k: v for k, v in dict(base["data"], **changes).items() if v is not None}))

        variants += [
            ("foreign key with the test x5c", chain.sign(base, key=chain.foreign), None),
            ("tampered payload", head + "." + b64url(json.dumps(tampered).encode()) + "." + signature, None),
            ("forged nested transaction", with_data(signedTransactionInfo=chain.sign(tx, key=chain.foreign)), None),
            ("forged nested renewal info", with_data(signedRenewalInfo=chain.sign(rn, key=chain.foreign)), None),
            ("leaf with an invalid OID", chain.sign(base, x5c=chain.invalid_oid_leaf), None),
            ("intermediate with an invalid OID", chain.sign(base, x5c=chain.invalid_oid_intermediate), None),
            ("nested transaction, leaf with an invalid OID", with_data(signedTransactionInfo=chain.sign(tx, x5c=chain.invalid_oid_leaf)), None),
            ("two-certificate x5c", chain.sign(base, x5c=chain.x5c[:2]), None),
            ("four-certificate x5c", chain.sign(base, x5c=chain.x5c + [chain.x5c[2]]), None),
            ("signed after the chain expired", chain.sign(dict(base, signedDate=2_600_000_000_000)), None),
            ("alg none", b64url(json.dumps({"alg": "none", "x5c": chain.x5c}).encode()) + "." + body + ".", None),
            ("alg HS256", chain.sign(base, alg="HS256"), None),
            ("wrong bundle", with_data(bundleId="com.other"), None),
            ("wrong bundle in the transaction", with_data(signedTransactionInfo=chain.sign(dict(tx, bundleId="com.other"))), None),
            ("sandbox notification", with_data(environment="Sandbox"), None),
            ("sandbox transaction", with_data(signedTransactionInfo=chain.sign(dict(tx, environment="Sandbox"))), None),
            ("sandbox renewal info", with_data(signedRenewalInfo=chain.sign(dict(rn, environment="Sandbox"))), None),
            ("wrong appAppleId", with_data(appAppleId=42), None),
            ("no appAppleId", with_data(appAppleId=None), None),
            ("renewal info of another purchase", with_data(signedRenewalInfo=chain.sign(dict(rn, originalTransactionId="1"))),
             "renewal_mismatch"),
            # Another product of the same purchase (a crossgrade) is a verified event like any
            # other: stored, and it would end Pro; nothing was registered here, so unmatched.
            ("another product", with_data(signedTransactionInfo=chain.sign(dict(tx, productId="coins.100"))), None),
            ("genuine", genuine, None),
            ("replay of the genuine one", genuine, None),
        ]

        for name, payload, business in variants:
            status, answer = server.call("POST", "/v1/app-store/notifications", {"signedPayload": payload})
            apple = apple_verdict(verifier, payload)
            code = "OK" if status == 200 else (answer or {}).get("code", str(status))
            detail = f"server {status} {code} {answer}, Apple {apple}"
            if business:
                check(f"{name}: server {business}, Apple accepts (a rule of this server)", code == business and apple == "OK", detail)
            elif apple == "OK":
                check(f"{name}: both accept ({answer.get('outcome') if status == 200 else code})", status == 200, detail)
            else:
                same = SERVER_REASON.get(code) == APPLE_REASON.get(apple, "signature")
                check(f"{name}: both refuse (server {code}, Apple {apple})", status == 422 and same, detail)

        # The entitlement token, verified with PyJWT against the published JWKS.
        status, account = server.call("POST", "/v1/accounts", {"handle": "peer", "displayName": "Peer"})
        token, account_id = account["token"]["secret"], account["account"]["id"]
        status, household = server.call("POST", "/v1/households", {"name": "Home"}, token)
        h = household["id"]
        expires = now + 3 * 3_600_000
        status, sub = server.call("PUT", f"/v1/households/{h}/subscription",
                                  {"signedTransaction": chain.sign(transaction(account_id, "7000000000000001", now - 60_000, expires))}, token)
        check("owner registers a purchase", status == 200 and sub.get("state") == "active", f"{status} {sub}")
        status, answer = server.call("GET", f"/v1/households/{h}/entitlement/token", token=token)
        _, jwks = server.call("GET", "/v1/entitlement-keys")
        entitlement_token = answer["token"]
        kid = jwt.get_unverified_header(entitlement_token)["kid"]
        jwk = next(k for k in jwks["keys"] if k["kid"] == kid)
        key = jwt.PyJWK(jwk).key
        claims = jwt.decode(entitlement_token, key, algorithms=["ES256"], options={"require": ["exp", "iat", "sub"]})
        check("entitlement token verifies with PyJWT and the JWKS",
              claims["sub"] == h and claims["pro"] is True and claims["state"] == "active"
              and claims["productId"] == PRODUCT and claims["exp"] == expires // 1000, json.dumps(claims))
        head, body, signature = entitlement_token.split(".")
        forged = b64url(json.dumps(dict(claims, pro=True, exp=claims["exp"] + 10 * 86_400)).encode())
        try:
            jwt.decode(head + "." + forged + "." + signature, key, algorithms=["ES256"])
            check("a forged entitlement token is refused by PyJWT", False, "it verified")
        except jwt.InvalidSignatureError:
            check("a forged entitlement token is refused by PyJWT", True)
    finally:
        server.stop()
    print(f"app-store-peer: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
