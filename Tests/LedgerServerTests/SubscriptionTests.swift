import AppStoreTestSupport
import Foundation
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
import StoreKitJWS
import XCTest

/// The subscription endpoints with JWS signed here by the generated test chain's leaf key.
final class SubscriptionTests: XCTestCase {
    func sign(owner: String, product: String = "pro.yearly", bundle: String = "com.example.kidledger",
              environment: String = "Production", expires: Int64 = 1_900_000_000_000, revoked: Bool = false,
              signedDate: Int64 = 1_764_000_000_000) throws -> String {
        var payload: JSONObject = [
            "transactionId": "2000000000000009", "originalTransactionId": "2000000000000001",
            "bundleId": .string(bundle), "productId": .string(product),
            "purchaseDate": .int(1_760_000_000_000), "originalPurchaseDate": .int(1_760_000_000_000),
            "expiresDate": .int(expires), "signedDate": .int(signedDate), "environment": .string(environment),
            "type": "Auto-Renewable Subscription", "inAppOwnershipType": "PURCHASED",
            "appAccountToken": .string(owner), "quantity": 1,
        ]
        if revoked { payload["revocationDate"] = .int(1_764_000_000_000); payload["revocationReason"] = 0 }
        let f = try AppStoreFixture()
        return try f.signer.sign(payloadJSON: JSONValue.object(payload).serialized(), x5c: f.chain)
    }

    func testOwnerStoresAndMembersReadEntitlement() throws {
        let root = try AppStoreFixture.files().root
        let s = try TestServer { c in
            c.bundleId = "com.example.kidledger"
            c.productIds = ["pro.yearly"]
            c.trustedRootPaths = [root]
            c.appAppleId = 1_234_567_890
        }
        defer { s.stop() }
        let (owner, t) = s.signup("mum")
        let (_, stranger) = s.signup("stranger")
        let h = s.household(t)
        let sub = "/v1/households/\(h)/subscription"

        XCTAssertEqual(s.call("GET", sub, token: t).code, "no_subscription")
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/entitlement", token: t).json["pro"], .bool(false))
        XCTAssertEqual(s.call("PUT", sub, token: stranger, json: .obj(["signedTransaction": .string(try sign(owner: owner))])).status, 404)

        let put = s.call("PUT", sub, token: t, json: .obj(["signedTransaction": .string(try sign(owner: owner.uppercased()))]))
        XCTAssertEqual(put.status, 200, String(decoding: put.body, as: UTF8.self))
        XCTAssertEqual(put.json["status"], "active")
        XCTAssertEqual(put.json["productId"], "pro.yearly")
        let ent = s.call("GET", "/v1/households/\(h)/entitlement", token: t)
        XCTAssertEqual(ent.json["pro"], .bool(true)); XCTAssertEqual(ent.json["grantedByAccountId"]?.stringValue, owner)
        XCTAssertEqual(s.call("GET", sub, token: t).json["status"], "active")

        let cases: [(String, String)] = [
            (try sign(owner: UUID().uuidString.lowercased()), "account_mismatch"),
            (try sign(owner: owner, product: "other"), "wrong_product"),
            (try sign(owner: owner, bundle: "com.other"), "wrong_bundle"),
            (try sign(owner: owner, environment: "Sandbox"), "wrong_environment"),
            (try sign(owner: owner, revoked: true), "revoked"),
            ("not.a.jws", "malformed"),
            // An unsecured JWS is well-formed; its algorithm is what is refused.
            (Base64Codec.encode(Array(#"{"alg":"none"}"#.utf8), alphabet: .url) + "."
                + (try sign(owner: owner)).split(separator: ".")[1] + ".", "unsupported_algorithm"),
        ]
        for (jws, code) in cases {
            let r = s.call("PUT", sub, token: t, json: .obj(["signedTransaction": .string(jws)]))
            XCTAssertEqual(r.status, 422, code); XCTAssertEqual(r.code, code)
            assertPlainDetail(r, code)
        }
        let expired = s.call("PUT", sub, token: t, json: .obj(["signedTransaction": .string(try sign(owner: owner, expires: 1_764_000_000_001, signedDate: 1_764_000_000_002))]))
        XCTAssertEqual(expired.status, 200); XCTAssertEqual(expired.json["status"], "expired")
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/entitlement", token: t).json["reason"], "expired")
        XCTAssertEqual(s.call("DELETE", sub, token: t).status, 204)
        XCTAssertEqual(s.call("GET", sub, token: t).code, "no_subscription")
    }

    func testNotConfiguredIs503() throws {
        let s = try TestServer()
        defer { s.stop() }
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let r = s.call("GET", "/v1/households/\(h)/entitlement", token: t)
        XCTAssertEqual(r.status, 503); XCTAssertEqual(r.code, "subscriptions_not_configured")
        for (method, path) in [("GET", "subscription"), ("DELETE", "subscription"), ("GET", "entitlement")] {
            XCTAssertEqual(s.call(method, "/v1/households/\(h)/\(path)", token: t).status, 503, path)
        }
        XCTAssertEqual(s.call("PUT", "/v1/households/\(h)/subscription", token: t,
                              json: .obj(["signedTransaction": "a.b.c"])).status, 503)

        // Authentication and the access rules come first: the 503 tells outsiders nothing.
        let (_, stranger) = s.signup("stranger")
        for (method, path) in [("GET", "subscription"), ("DELETE", "subscription"), ("GET", "entitlement")] {
            XCTAssertEqual(s.call(method, "/v1/households/\(h)/\(path)", token: stranger).status, 404, path)
            XCTAssertEqual(s.call(method, "/v1/households/\(h)/\(path)").status, 401, path)
        }
        XCTAssertEqual(s.call("PUT", "/v1/households/\(h)/subscription", token: stranger,
                              json: .obj(["signedTransaction": "a.b.c"])).status, 404)
        s.call("POST", "/v1/households/\(h)/share", token: t)
        let inv = s.call("POST", "/v1/households/\(h)/share/participants", token: t,
                         json: .obj(["handle": "stranger", "permission": "readWrite"])).json["invitationId"]!.stringValue!
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(inv)/accept", token: stranger).status, 200)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/subscription", token: stranger).code, "owner_only")
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/entitlement", token: stranger).status, 503)
    }

    func testAppleMockTransactionIsRefusedAgainstTheDefaultRoot() throws {
        let jws = try String(contentsOfFile: AppStoreTestMaterial.fixture("mock-signed/transactionInfo"), encoding: .utf8)
        let s = try TestServer { $0.bundleId = "com.example"; $0.productIds = ["x"]; $0.environments = ["Sandbox"] }
        defer { s.stop() }
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let r = s.call("PUT", "/v1/households/\(h)/subscription", token: t,
                       json: .obj(["signedTransaction": .string(jws.trimmingCharacters(in: .whitespacesAndNewlines))]))
        XCTAssertEqual(r.status, 422); XCTAssertEqual(r.code, "invalid_chain")
        XCTAssertEqual(r.json["detail"]?.stringValue, "The certificate chain of the signed transaction does not verify against Apple's root "
                       + "(x5c must hold the App Store's leaf, intermediate and root certificates, valid at its signedDate).")
    }

    /// Every refusal of the verifier and the policy reads in the API's words, whatever
    /// reason the verifier (or OpenSSL under it) gave.
    func testEveryRefusalHasADetailInTheAPIsWords() {
        let reasons = ["certificate signature failure", "x5c[1] is not a DER X.509 certificate", "payload has no signedDate"]
        var details: [String: String] = [:]
        for reason in reasons {
            let errors: [JWSError] = [.malformed(reason), .invalidChain(reason)]
            for e in errors {
                details["\(e)"] = e.problemDetail("notification")
                XCTAssertFalse(e.problemDetail("notification").contains(reason))
            }
        }
        let jws: [JWSError] = [.unsupportedAlgorithm, .invalidSignature]
        for e in jws { details["\(e)"] = e.problemDetail("signed transaction") }
        let policy: [PolicyError] = [.wrongBundle, .wrongProduct, .wrongEnvironment, .revoked, .accountMismatch, .wrongAppAppleId,
                                     .renewalMismatch]
        for e in policy { details["\(e)"] = e.problemDetail("signed transaction") }
        for (label, detail) in details {
            let body: [UInt8] = JSONValue.object(["detail": .string(detail)]).serialized()
            assertPlainDetail(TestServer.Reply(status: 422, headers: [:], body: Data(body)), label)
        }
        let sentences = Set(details.values)
        XCTAssertEqual(sentences.count, details.count - 4, "one sentence per case, whatever the reason")
    }
}
