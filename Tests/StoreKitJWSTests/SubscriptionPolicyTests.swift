import Foundation
import StoreKitJWS
import XCTest

/// Business rules over payloads signed in the test with `testLeaf.key`.
final class SubscriptionPolicyTests: XCTestCase {
    private var verifier: JWSVerifier!
    private var signer: ES256Signer!
    private var chain: [String] = []
    private let policy = AppStoreVectors.policy
    private let owner = AppStoreVectors.ownerAccountId
    private let now = Date(timeIntervalSince1970: 1_700_000_100)

    override func setUpWithError() throws {
        verifier = JWSVerifier(trustedRoots: [try AppStoreVectors.testRoot()])
        signer = try AppStoreVectors.signer()
        chain = try AppStoreVectors.testChain()
    }

    /// Signs, verifies, then evaluates `payload`, as the server does.
    private func evaluate(_ payload: JWSTransactionDecodedPayload, policy: SubscriptionPolicy? = nil,
                          owner: String? = nil, now: Date? = nil) throws -> SubscriptionStatus {
        let verified = try verifier.verifyTransaction(try signer.sign(payload: payload, x5c: chain))
        return try (policy ?? self.policy).evaluate(verified, ownerAccountId: owner ?? self.owner, now: now ?? self.now)
    }

    private func policyCode(_ payload: JWSTransactionDecodedPayload, policy: SubscriptionPolicy? = nil, owner: String? = nil) -> String? {
        do { _ = try evaluate(payload, policy: policy, owner: owner); return nil }
        catch let error as PolicyError { return error.code }
        catch { return "other: \(error)" }
    }

    func testActiveSubscription() throws {
        let status = try evaluate(AppStoreVectors.goodPayload())
        XCTAssertEqual(status, SubscriptionStatus(active: true, productId: "com.kidledger.pro.yearly",
                                                  originalTransactionId: "2000000000000001",
                                                  expiresAt: Date(timeIntervalSince1970: 1_730_536_000),
                                                  environment: "Production"))
        XCTAssertEqual(status.status, "active")
    }

    func testExpiryIsInactiveNotAnError() throws {
        let payload = AppStoreVectors.goodPayload()
        let expires = try XCTUnwrap(payload.expiresDate)
        let later = try evaluate(payload, now: expires.addingTimeInterval(1))
        XCTAssertFalse(later.active)
        XCTAssertEqual(later.status, "expired")
        XCTAssertFalse(try evaluate(payload, now: expires).active)   // expiresDate <= now
        XCTAssertTrue(try evaluate(payload, now: expires.addingTimeInterval(-0.001)).active)
        var lifetime = payload
        lifetime.expiresDate = nil
        XCTAssertTrue(try evaluate(lifetime).active)
    }

    func testWrongBundle() {
        var payload = AppStoreVectors.goodPayload()
        payload.bundleId = "com.kidledger.app.evil"
        XCTAssertEqual(policyCode(payload), "wrong_bundle")
        payload.bundleId = "COM.KIDLEDGER.APP"
        XCTAssertEqual(policyCode(payload), "wrong_bundle")
        payload.bundleId = nil
        XCTAssertEqual(policyCode(payload), "wrong_bundle")
    }

    func testWrongProduct() {
        var payload = AppStoreVectors.goodPayload()
        payload.productId = "com.kidledger.coins"
        XCTAssertEqual(policyCode(payload), "wrong_product")
        payload.productId = nil
        XCTAssertEqual(policyCode(payload), "wrong_product")
        payload.productId = "com.kidledger.pro.monthly"
        XCTAssertNil(policyCode(payload))
    }

    func testWrongEnvironment() {
        var payload = AppStoreVectors.goodPayload()
        payload.environment = "Sandbox"
        XCTAssertEqual(policyCode(payload), "wrong_environment")
        let sandbox = SubscriptionPolicy(bundleId: policy.bundleId, productIds: policy.productIds,
                                         environments: ["Production", "Sandbox", "Xcode", "LocalTesting"])
        XCTAssertNil(policyCode(payload, policy: sandbox))
        for environment in ["Xcode", "LocalTesting"] {
            payload.environment = environment
            XCTAssertEqual(policyCode(payload, policy: sandbox), "wrong_environment", environment)
        }
        payload.environment = nil
        XCTAssertEqual(policyCode(payload, policy: sandbox), "wrong_environment")
        payload.environment = "production"
        XCTAssertEqual(policyCode(payload), "wrong_environment")
    }

    func testRevoked() {
        var payload = AppStoreVectors.goodPayload()
        payload.revocationDate = Date(timeIntervalSince1970: 1_699_500_000)
        payload.revocationReason = 0
        XCTAssertEqual(policyCode(payload), "revoked")
    }

    func testAccountMismatch() {
        var payload = AppStoreVectors.goodPayload()
        XCTAssertNil(policyCode(payload, owner: owner.uppercased()))   // case-insensitive
        payload.appAccountToken = owner
        XCTAssertNil(policyCode(payload))
        payload.appAccountToken = "00000000-0000-4000-8000-000000000000"
        XCTAssertEqual(policyCode(payload), "account_mismatch")
        payload.appAccountToken = nil
        XCTAssertEqual(policyCode(payload), "account_mismatch")
        payload.appAccountToken = ""
        XCTAssertEqual(policyCode(payload, owner: ""), "account_mismatch")
    }

    func testChecksRunInDocumentedOrder() {
        let payload = JWSTransactionDecodedPayload(bundleId: "x", signedDate: AppStoreVectors.testDate, environment: "Xcode")
        XCTAssertEqual(policyCode(payload), "wrong_bundle")
        var p = payload
        p.bundleId = policy.bundleId
        XCTAssertEqual(policyCode(p), "wrong_product")
        p.productId = "com.kidledger.pro.yearly"
        XCTAssertEqual(policyCode(p), "wrong_environment")
        p.environment = "Production"
        p.revocationDate = Date()
        XCTAssertEqual(policyCode(p), "revoked")
        p.revocationDate = nil
        XCTAssertEqual(policyCode(p), "account_mismatch")
    }

    func testOriginalTransactionIdFallsBackToTransactionId() throws {
        var payload = AppStoreVectors.goodPayload()
        payload.originalTransactionId = nil
        XCTAssertEqual(try evaluate(payload).originalTransactionId, "2000000000000009")
    }

    func testPolicyErrorCodes() {
        XCTAssertEqual([PolicyError.wrongBundle, .wrongProduct, .wrongEnvironment, .revoked, .accountMismatch].map(\.code),
                       ["wrong_bundle", "wrong_product", "wrong_environment", "revoked", "account_mismatch"])
    }
}
