import AppStoreTestSupport
import Foundation
import StoreKitJWS
import XCTest

/// The App Store test material: Apple's own files from `Tests/Fixtures/app-store` (the real
/// chain, Apple Root CA - G3, Apple's mock signed transaction and the test root that signed
/// it) and this process's generated test chain (``AppStoreTestMaterial/chain()``), which
/// signs everything the tests sign.
enum AppStoreVectors {
    /// The repository root.
    static let repositoryRoot = AppStoreTestMaterial.repositoryRoot

    /// Apple's files, by path under `Tests/Fixtures/app-store`.
    static func bytes(_ relative: String) throws -> [UInt8] { try AppStoreTestMaterial.fixtureBytes(relative) }

    static func text(_ relative: String) throws -> String {
        String(decoding: try bytes(relative), as: UTF8.self)
    }

    static func chain() throws -> TestCertificateChain { try AppStoreTestMaterial.chain() }

    /// DER of a one-certificate PEM.
    static func der(_ pem: String) throws -> [UInt8] {
        let list = try CertificateDecoding.derCertificates(pem: Array(pem.utf8))
        XCTAssertEqual(list.count, 1)
        return list[0]
    }

    /// Standard-base64 DER of a one-certificate PEM, for `x5c`.
    static func x5c(_ pem: String) throws -> String {
        Base64Codec.encode(try der(pem), alphabet: .standard)
    }

    /// The generated chain's root.
    static func testRoot() throws -> TrustedRoot { try TrustedRoot(der: der(chain().rootPEM)) }
    /// Apple Root CA - G3.
    static func appleRoot() throws -> TrustedRoot { try TrustedRoot.load(path: AppStoreTestMaterial.fixture("AppleRootCA-G3.der")) }
    /// Apple's test root, which signed Apple's mock signed data.
    static func appleTestRoot() throws -> TrustedRoot { try TrustedRoot.load(path: AppStoreTestMaterial.fixture("mock-signed/testCA.pem")) }

    /// The good test chain `[leaf, intermediate, root]`.
    static func testChain() throws -> [String] {
        let c = try chain()
        return [try x5c(c.leafPEM), try x5c(c.intermediatePEM), try x5c(c.rootPEM)]
    }

    static func signer() throws -> ES256Signer {
        try ES256Signer(privateKeyPEM: chain().leafKeyPEM)
    }

    /// A date inside the test chain's validity (2023-01-01 … 2049-12-31).
    static let testDate = Date(timeIntervalSince1970: 1_700_000_000)   // 2023-11-14

    static let ownerAccountId = "5f0c6b9e-3a4d-4c8e-9a1b-2d3e4f5a6b7c"

    /// A payload that passes ``policy`` for ``ownerAccountId``.
    static func goodPayload() -> JWSTransactionDecodedPayload {
        JWSTransactionDecodedPayload(
            originalTransactionId: "2000000000000001", transactionId: "2000000000000009",
            webOrderLineItemId: "2000000000000002", bundleId: "com.kidledger.app",
            productId: "com.kidledger.pro.yearly", subscriptionGroupIdentifier: "21000001",
            purchaseDate: Date(timeIntervalSince1970: 1_699_000_000),
            originalPurchaseDate: Date(timeIntervalSince1970: 1_690_000_000),
            expiresDate: Date(timeIntervalSince1970: 1_730_536_000), quantity: 1,
            type: "Auto-Renewable Subscription", appAccountToken: ownerAccountId.uppercased(),
            inAppOwnershipType: "PURCHASED", signedDate: testDate, isUpgraded: false,
            environment: "Production", storefront: "USA", storefrontId: "143441",
            transactionReason: "PURCHASE", price: 29_990, currency: "USD")
    }

    static let policy = SubscriptionPolicy(bundleId: "com.kidledger.app",
                                           productIds: ["com.kidledger.pro.yearly", "com.kidledger.pro.monthly"])
}
