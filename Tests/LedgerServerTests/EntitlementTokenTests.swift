import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
import StoreKitJWS
import Synchronization
import XCTest

/// The signed entitlement token, its keys, and the state machine's clock.
final class EntitlementTokenTests: XCTestCase {
    /// Read when each test starts (XCTest creates every test's instance up front).
    var now: Int64 = 0
    override func setUp() { now = Int64(Date().timeIntervalSince1970 * 1000) }

    /// Verifies `token` with the server's JWKS and returns (header, claims).
    func verify(_ s: TestServer, _ token: String) throws -> (JSONValue, JSONValue) {
        let jwks = s.call("GET", "/v1/entitlement-keys")
        XCTAssertEqual(jwks.status, 200)
        let parts = token.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(parts.count, 3)
        let header = try JSONValue.parse(XCTUnwrap(Base64Codec.decode(Array(parts[0].utf8), alphabet: .url)))
        guard case .array(let keys)? = jwks.json["keys"],
              let jwk = keys.first(where: { $0["kid"] == header["kid"] }) else {
            XCTFail("no published key has the token's kid"); return (.null, .null)
        }
        XCTAssertEqual(jwk["kty"], "EC"); XCTAssertEqual(jwk["crv"], "P-256"); XCTAssertEqual(jwk["alg"], "ES256")
        let key = try ES256PublicKey(x: XCTUnwrap(Base64Codec.decode(Array(jwk["x"]!.stringValue!.utf8), alphabet: .url)),
                                     y: XCTUnwrap(Base64Codec.decode(Array(jwk["y"]!.stringValue!.utf8), alphabet: .url)))
        let payload = try XCTUnwrap(key.verifiedPayload(token), "the token does not verify with the published key")
        // One changed byte of the payload and it no longer verifies.
        var forged = Array(parts[1].utf8)
        forged[4] = forged[4] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        XCTAssertNil(key.verifiedPayload(parts[0] + "." + String(decoding: forged, as: UTF8.self) + "." + parts[2]))
        return (header, try JSONValue.parse(payload))
    }

    func testTokenStatesTheEntitlementUntilTheEarlierOfTTLAndTheStateEnd() throws {
        let f = try AppStoreFixture()
        let s = try AppStoreFixture.server()
        defer { s.stop() }
        let (owner, t) = s.signup("mum")
        let (_, stranger) = s.signup("stranger")
        let h = s.household(t)
        let path = "/v1/households/\(h)/entitlement/token"

        // No subscription: pro false for the whole TTL.
        var r = s.call("GET", path, token: t)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.header("Cache-Control"), "no-store")
        var (header, claims) = try verify(s, r.json["token"]!.stringValue!)
        XCTAssertEqual(header["alg"], "ES256"); XCTAssertEqual(header["kid"], r.json["kid"])
        XCTAssertEqual(claims["sub"]?.stringValue, h); XCTAssertEqual(claims["pro"], false); XCTAssertEqual(claims["state"], .null)
        XCTAssertEqual(claims["iss"], "kidledger")
        let iat = try XCTUnwrap(claims["iat"]?.intValue)
        XCTAssertEqual(Double(iat), Date().timeIntervalSince1970, accuracy: 5)
        XCTAssertEqual(claims["exp"]?.intValue, iat + 86_400)
        XCTAssertEqual(r.json["expiresAt"]?.stringValue, Timestamp.format(ms: (iat + 86_400) * 1000))

        // Active until two hours from now: the token ends with the subscription.
        let expires = now + 2 * 3_600_000
        let jws = try f.sign(AppStoreFixture.transaction(owner: owner, original: "7", signedDate: now - 60_000, expires: expires))
        XCTAssertEqual(s.call("PUT", "/v1/households/\(h)/subscription", token: t, json: .obj(["signedTransaction": .string(jws)])).status, 200)
        r = s.call("GET", path, token: t)
        (_, claims) = try verify(s, r.json["token"]!.stringValue!)
        XCTAssertEqual(claims["pro"], true); XCTAssertEqual(claims["state"], "active"); XCTAssertEqual(claims["productId"], "pro.yearly")
        XCTAssertEqual(claims["exp"]?.intValue, expires / 1000)

        // Members only.
        XCTAssertEqual(s.call("GET", path, token: stranger).status, 404)
        XCTAssertEqual(s.call("GET", path).status, 401)
    }

    func testShortTTLWins() throws {
        let f = try AppStoreFixture()
        let s = try AppStoreFixture.server { $0.entitlementTokenTTL = 60 }
        defer { s.stop() }
        let (owner, t) = s.signup("mum")
        let h = s.household(t)
        let jws = try f.sign(AppStoreFixture.transaction(owner: owner, original: "8", signedDate: now - 60_000, expires: now + 3_600_000))
        XCTAssertEqual(s.call("PUT", "/v1/households/\(h)/subscription", token: t, json: .obj(["signedTransaction": .string(jws)])).status, 200)
        let (_, claims) = try verify(s, s.call("GET", "/v1/households/\(h)/entitlement/token", token: t).json["token"]!.stringValue!)
        XCTAssertEqual(claims["exp"]?.intValue, claims["iat"]!.intValue! + 60)
    }

    func testSigningKeyIsKeptWithTheDataAndRetiredKeysStayPublished() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-keys-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try EntitlementKeys(dataDirectory: dir)
        let keyPath = dir + "/entitlement-keys/signing-key.pem"
        let mode = try FileManager.default.attributesOfItem(atPath: keyPath)[.posixPermissions] as? Int
        XCTAssertEqual(mode, 0o600)
        XCTAssertEqual(try EntitlementKeys(dataDirectory: dir).signingKid, first.signingKid, "the key survives a restart")

        // Rotation: the old key moves aside, a new one is created, both are published.
        try FileManager.default.moveItem(atPath: keyPath, toPath: dir + "/entitlement-keys/retired-1.pem")
        let second = try EntitlementKeys(dataDirectory: dir)
        XCTAssertNotEqual(second.signingKid, first.signingKid)
        XCTAssertEqual(second.published.map(\.kid), [second.signingKid, first.signingKid])
        // The kid is the RFC 7638 thumbprint of the public key.
        let jwk = second.published[0].jwk
        let canonical = #"{"crv":"P-256","kty":"EC","x":"\#(jwk["x"]!.stringValue!)","y":"\#(jwk["y"]!.stringValue!)"}"#
        XCTAssertEqual(second.signingKid, TokenSecret.base64url(TokenSecret.sha256(canonical)))
    }

    /// Server processes sharing one data folder may start at the same moment: every one
    /// starts, and all sign with the one key the folder ends up with.
    func testProcessesStartingTogetherShareOneSigningKey() throws {
        for _ in 0..<20 {
            let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-keys-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let kids = Mutex<[String]>([])
            let failures = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 6) { _ in
                do {
                    let keys = try EntitlementKeys(dataDirectory: dir)
                    kids.withLock { $0.append(keys.signingKid) }
                } catch {
                    failures.withLock { $0.append("\(error)") }
                }
            }
            XCTAssertEqual(failures.withLock { $0 }, [])
            let expected = try EntitlementKeys(dataDirectory: dir)
            XCTAssertEqual(Set(kids.withLock { $0 }), [expected.signingKid], "every start signs with the key in the file")
            XCTAssertEqual(expected.published.count, 1)
            XCTAssertEqual(try FileManager.default.contentsOfDirectory(atPath: dir + "/entitlement-keys"),
                           ["signing-key.pem"], "no partial file left")
        }
    }

    /// Pro is judged when asked: expiry and the end of a grace period end it without a notification.
    func testStateIsEvaluatedAtRequestTime() {
        var p = PurchaseEvent(originalTransactionId: "1", environment: "Production", productId: "p", expiresAt: 1_000,
                              revokedAt: nil, graceUntil: nil, billingRetry: false, autoRenew: true, appleStatus: 1,
                              type: "DID_RENEW", subtype: nil, signedDate: 0, key: "", source: "notification",
                              signedTransaction: "", signedRenewalInfo: nil)
        XCTAssertEqual(PurchaseState.derive(p, now: 999).0, .active)
        XCTAssertEqual(PurchaseState.derive(p, now: 999).endsAt, 1_000)
        XCTAssertEqual(PurchaseState.derive(p, now: 1_000).0, .expired)
        p.graceUntil = 2_000; p.billingRetry = true
        XCTAssertEqual(PurchaseState.derive(p, now: 1_500).0, .inGracePeriod)
        XCTAssertEqual(PurchaseState.derive(p, now: 1_500).endsAt, 2_000)
        XCTAssertEqual(PurchaseState.derive(p, now: 2_000).0, .billingRetry)
        XCTAssertFalse(PurchaseState.billingRetry.isPro)
        p.revokedAt = 500
        XCTAssertEqual(PurchaseState.derive(p, now: 0).0, .refunded)
        p.type = "REVOKE"
        XCTAssertEqual(PurchaseState.derive(p, now: 0).0, .revoked)
        p.revokedAt = nil; p.type = "EXPIRED"; p.appleStatus = 2; p.graceUntil = nil; p.billingRetry = false
        XCTAssertEqual(PurchaseState.derive(p, now: 0).0, .expired, "the App Store said expired")
        p.expiresAt = nil; p.appleStatus = nil
        XCTAssertEqual(PurchaseState.derive(p, now: .max).0, .active, "no expiry date: active")
    }
}
