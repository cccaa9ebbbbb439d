import Foundation
import StoreKitJWS
import XCTest

/// Server Notifications V2, renewal info and the server's own ES256 keys.
final class NotificationVerifierTests: XCTestCase {
    private var verifier: JWSVerifier!
    private var signer: ES256Signer!
    private var chain: [String] = []
    private let policy = SubscriptionPolicy(bundleId: "com.kidledger.app", productIds: ["com.kidledger.pro.yearly"],
                                            environments: ["Production", "Sandbox"], appAppleId: 1234)
    private let signedMs: Int64 = 1_700_000_000_000

    override func setUpWithError() throws {
        verifier = JWSVerifier(trustedRoots: [try AppStoreVectors.testRoot()])
        signer = try AppStoreVectors.signer()
        chain = try AppStoreVectors.testChain()
    }

    private func sign(_ object: [String: Any]) throws -> String {
        try signer.sign(payloadJSON: Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])), x5c: chain)
    }

    private func renewal(_ changes: [String: Any] = [:]) -> [String: Any] {
        var r: [String: Any] = ["originalTransactionId": "2000000000000001", "autoRenewStatus": 1, "isInBillingRetryPeriod": true,
                                "gracePeriodExpiresDate": signedMs + 86_400_000, "signedDate": signedMs, "environment": "Production",
                                "productId": "com.kidledger.pro.yearly"]
        r.merge(changes) { $1 }
        return r
    }

    private func notification(data changes: [String: Any?] = [:], outer: [String: Any] = [:]) throws -> String {
        var data: [String: Any] = ["bundleId": "com.kidledger.app", "environment": "Production", "appAppleId": 1234, "status": 4,
                                   "signedTransactionInfo": try signer.sign(payload: AppStoreVectors.goodPayload(), x5c: chain),
                                   "signedRenewalInfo": try sign(renewal())]
        for (k, v) in changes { data[k] = v }
        var n: [String: Any] = ["notificationType": "DID_FAIL_TO_RENEW", "subtype": "GRACE_PERIOD", "version": "2.0",
                                "notificationUUID": "0F2F8C7E-6B1C-4F8A-9D7E-1A2B3C4D5E6F", "signedDate": signedMs, "data": data]
        n.merge(outer) { $1 }
        return try sign(n)
    }

    private func code(_ signedPayload: String, policy: SubscriptionPolicy? = nil) -> String? {
        do { _ = try NotificationVerifier(verifier: verifier, policy: policy ?? self.policy).verify(signedPayload); return nil }
        catch let e as JWSError { return e.code }
        catch let e as PolicyError { return e.code }
        catch { return "\(error)" }
    }

    func testVerifiedNotificationCarriesItsNestedPayloads() throws {
        let v = try NotificationVerifier(verifier: verifier, policy: policy).verify(try notification())
        XCTAssertEqual(v.uuid, "0f2f8c7e-6b1c-4f8a-9d7e-1a2b3c4d5e6f")
        XCTAssertEqual(v.type, "DID_FAIL_TO_RENEW"); XCTAssertEqual(v.notification.subtype, "GRACE_PERIOD")
        XCTAssertEqual(v.environment, "Production"); XCTAssertEqual(v.notification.data?.status, 4)
        XCTAssertEqual(v.transaction, AppStoreVectors.goodPayload())
        XCTAssertEqual(v.renewalInfo?.isInBillingRetryPeriod, true)
        XCTAssertEqual(v.renewalInfo?.gracePeriodExpiresDate, JWSTransactionDecodedPayload.date(milliseconds: signedMs + 86_400_000))
    }

    func testEveryCheck() throws {
        let foreign = try ES256Signer(privateKeyPEM: ES256Signer.generatePrivateKeyPEM())
        let cases: [(String, String)] = [
            (try notification(data: ["bundleId": "com.other"]), "wrong_bundle"),
            (try notification(data: ["environment": "Xcode"]), "wrong_environment"),
            (try notification(data: ["environment": "Sandbox"]), "wrong_environment"),   // nested JWS say Production
            (try notification(data: ["appAppleId": 99]), "wrong_app_apple_id"),
            (try notification(data: ["appAppleId": nil]), "wrong_app_apple_id"),
            (try notification(data: ["signedRenewalInfo": try sign(renewal(["originalTransactionId": "1"]))]), "renewal_mismatch"),
            (try notification(data: ["signedRenewalInfo": try sign(renewal(["environment": "Sandbox"]))]), "wrong_environment"),
            (try notification(data: ["signedRenewalInfo": try foreign.sign(payloadJSON: Array(try JSONSerialization.data(withJSONObject: renewal())), x5c: chain)]),
             "invalid_signature"),
            (try notification(outer: ["notificationUUID": ""]), "malformed"),
            (try notification(outer: ["notificationType": 7]), "malformed"),
            (try sign(["notificationType": "TEST", "notificationUUID": "x", "signedDate": signedMs]), "malformed"),
        ]
        for (index, (jws, expected)) in cases.enumerated() {
            XCTAssertEqual(code(jws), expected, "case \(index)")
        }
        // Production notifications need a configured appAppleId; the sandbox may omit it.
        var unconfigured = policy
        unconfigured.appAppleId = nil
        XCTAssertEqual(code(try notification(), policy: unconfigured), "wrong_app_apple_id")
        XCTAssertNoThrow(try policy.checkAppAppleId(nil, environment: "Sandbox"))
        XCTAssertThrowsError(try policy.checkAppAppleId(99, environment: "Sandbox"))
        XCTAssertNoThrow(try unconfigured.checkAppAppleId(99, environment: "Sandbox"))
    }

    func testRenewalInfoRoundTrips() throws {
        let payload = JWSRenewalInfoDecodedPayload(originalTransactionId: "1", productId: "p", autoRenewStatus: 0,
                                                   gracePeriodExpiresDate: Date(timeIntervalSince1970: 1_700_000_000.123),
                                                   signedDate: AppStoreVectors.testDate, environment: "Sandbox")
        let verified = try verifier.verify(try signer.sign(payload: payload, x5c: chain), as: JWSRenewalInfoDecodedPayload.self)
        XCTAssertEqual(verified, payload)
        XCTAssertThrowsError(try verifier.verify(try sign(["signedDate": 1.5]), as: JWSRenewalInfoDecodedPayload.self))
    }

    func testGeneratedKeysSignTokensThatOnlyTheirPublicKeyVerifies() throws {
        let pem = try ES256Signer.generatePrivateKeyPEM()
        XCTAssertTrue(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let key = try ES256Signer(privateKeyPEM: pem)
        let other = try ES256Signer(privateKeyPEM: ES256Signer.generatePrivateKeyPEM())
        let (x, y) = try key.publicKeyCoordinates()
        XCTAssertEqual(x.count, 32); XCTAssertEqual(y.count, 32)
        let publicKey = try ES256PublicKey(x: x, y: y)
        let header = Array(#"{"alg":"ES256","kid":"k"}"#.utf8), claims = Array(#"{"pro":true}"#.utf8)
        XCTAssertEqual(publicKey.verifiedPayload(try key.sign(headerJSON: header, payloadJSON: claims)), claims)
        XCTAssertNil(publicKey.verifiedPayload(try other.sign(headerJSON: header, payloadJSON: claims)))
        XCTAssertNil(publicKey.verifiedPayload(try key.sign(headerJSON: Array(#"{"alg":"HS256"}"#.utf8), payloadJSON: claims)))
        XCTAssertThrowsError(try ES256PublicKey(x: x, y: [UInt8](repeating: 1, count: 32)), "not on the curve")
    }
}
