import Foundation
import StoreKitJWS
import XCTest

/// Locates and loads the shared App Store test material, `<repo>/../shared/vectors/app-store`.
enum AppStoreVectors {
    /// The repository root, derived from this file's location.
    static let repositoryRoot: URL = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()   // Tests/StoreKitJWSTests
        .deletingLastPathComponent()   // Tests
        .deletingLastPathComponent()   // <repo>

    /// `<repo>/../shared/vectors/app-store`.
    static let directory: URL = repositoryRoot
        .deletingLastPathComponent()
        .appendingPathComponent("shared/vectors/app-store", isDirectory: true)

    static func path(_ relative: String) -> String {
        directory.appendingPathComponent(relative).path
    }

    static func bytes(_ relative: String) throws -> [UInt8] {
        Array(try Data(contentsOf: URL(fileURLWithPath: path(relative))))
    }

    static func text(_ relative: String) throws -> String {
        String(decoding: try bytes(relative), as: UTF8.self)
    }

    /// DER of a one-certificate PEM vector.
    static func der(pem relative: String) throws -> [UInt8] {
        let list = try CertificateDecoding.derCertificates(pem: bytes(relative))
        XCTAssertEqual(list.count, 1)
        return list[0]
    }

    /// Standard-base64 DER of a one-certificate PEM vector, for `x5c`.
    static func x5c(pem relative: String) throws -> String {
        Base64Codec.encode(try der(pem: relative), alphabet: .standard)
    }

    static func testRoot() throws -> TrustedRoot { try TrustedRoot.load(path: path("test-chain/testCA.pem")) }
    static func appleRoot() throws -> TrustedRoot { try TrustedRoot.load(path: path("AppleRootCA-G3.der")) }

    /// The good test chain `[testLeaf, testIntermediate, testCA]`.
    static func testChain() throws -> [String] {
        [try x5c(pem: "test-chain/testLeaf.pem"),
         try x5c(pem: "test-chain/testIntermediate.pem"),
         try x5c(pem: "test-chain/testCA.pem")]
    }

    static func signer() throws -> ES256Signer {
        try ES256Signer(privateKeyPath: path("test-chain/testLeaf.key"))
    }

    /// A date inside the test chain's validity (2023-01-06 … 2032-12-31).
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
