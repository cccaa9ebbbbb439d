import Foundation
import StoreKitJWS
import XCTest

/// Certificate-path checks against Apple's real chain and the generated test chain.
final class ChainVerifierTests: XCTestCase {
    private func chainCode(_ body: () throws -> Void) -> String? {
        do { try body(); return nil } catch let error as JWSError { return error.code } catch { return "other: \(error)" }
    }

    private let realLeaf = "real-chain/apple-signing-leaf.der"
    private let realIntermediate = "real-chain/AppleWWDRCA-G6.der"

    func testRealChainVerifiesToG3AtItsDate() throws {
        let verifier = ChainVerifier(trustedRoots: [try AppStoreVectors.appleRoot()])
        let leaf = try AppStoreVectors.bytes(realLeaf)
        let intermediate = try AppStoreVectors.bytes(realIntermediate)
        let iso = ISO8601DateFormatter()
        try verifier.verify(leafDER: leaf, intermediateDER: intermediate, at: iso.date(from: "2025-10-31T02:09:35Z")!)
        try verifier.verify(leafDER: leaf, intermediateDER: intermediate,
                            at: JWSTransactionDecodedPayload.date(milliseconds: 1_761_962_975_000))
    }

    func testRealChainFailsIn2040() throws {
        let verifier = ChainVerifier(trustedRoots: [try AppStoreVectors.appleRoot()])
        let date = ISO8601DateFormatter().date(from: "2040-01-01T00:00:00Z")!
        XCTAssertEqual(chainCode {
            try verifier.verify(leafDER: AppStoreVectors.bytes(realLeaf),
                                intermediateDER: AppStoreVectors.bytes(realIntermediate), at: date)
        }, "invalid_chain")
    }

    func testRealChainFailsBeforeLeafValidity() throws {
        let verifier = ChainVerifier(trustedRoots: [try AppStoreVectors.appleRoot()])
        XCTAssertEqual(chainCode {
            try verifier.verify(leafDER: AppStoreVectors.bytes(realLeaf),
                                intermediateDER: AppStoreVectors.bytes(realIntermediate),
                                at: Date(timeIntervalSince1970: 1_700_000_000))
        }, "invalid_chain")
    }

    func testRealChainFailsAgainstTestRoots() throws {
        for root in [try AppStoreVectors.testRoot(), try AppStoreVectors.appleTestRoot()] {
            let verifier = ChainVerifier(trustedRoots: [root])
            XCTAssertEqual(chainCode {
                try verifier.verify(leafDER: AppStoreVectors.bytes(realLeaf),
                                    intermediateDER: AppStoreVectors.bytes(realIntermediate),
                                    at: JWSTransactionDecodedPayload.date(milliseconds: 1_761_962_975_000))
            }, "invalid_chain")
        }
    }

    func testRealChainVerifiesWhenG3IsOneOfSeveralRoots() throws {
        let verifier = ChainVerifier(trustedRoots: [try AppStoreVectors.testRoot(), try AppStoreVectors.appleRoot()])
        try verifier.verify(leafDER: AppStoreVectors.bytes(realLeaf),
                            intermediateDER: AppStoreVectors.bytes(realIntermediate),
                            at: JWSTransactionDecodedPayload.date(milliseconds: 1_761_962_975_000))
    }

    func testNoTrustedRootRefusesEverything() throws {
        XCTAssertEqual(chainCode {
            try ChainVerifier(trustedRoots: []).verify(
                leafDER: AppStoreVectors.bytes(realLeaf), intermediateDER: AppStoreVectors.bytes(realIntermediate),
                at: JWSTransactionDecodedPayload.date(milliseconds: 1_761_962_975_000))
        }, "invalid_chain")
    }

    func testTestChainVerifiesWithinValidityOnly() throws {
        let verifier = ChainVerifier(trustedRoots: [try AppStoreVectors.testRoot()])
        let chain = try AppStoreVectors.chain()
        let leaf = try AppStoreVectors.der(chain.leafPEM)
        let intermediate = try AppStoreVectors.der(chain.intermediatePEM)
        let iso = ISO8601DateFormatter()
        try verifier.verify(leafDER: leaf, intermediateDER: intermediate, at: iso.date(from: "2023-01-01T00:00:00Z")!)
        try verifier.verify(leafDER: leaf, intermediateDER: intermediate, at: iso.date(from: "2049-12-31T00:00:00Z")!)
        XCTAssertEqual(chainCode {
            try verifier.verify(leafDER: leaf, intermediateDER: intermediate, at: iso.date(from: "2050-01-01T00:00:00Z")!)
        }, "invalid_chain")
        XCTAssertEqual(chainCode {
            try verifier.verify(leafDER: leaf, intermediateDER: intermediate, at: iso.date(from: "2022-12-31T23:59:59Z")!)
        }, "invalid_chain")
        XCTAssertEqual(chainCode {
            try verifier.verify(leafDER: leaf, intermediateDER: intermediate, at: Date(timeIntervalSince1970: .infinity))
        }, "invalid_chain")
    }

    func testInvalidOIDLeafIsRefused() throws {
        let verifier = ChainVerifier(trustedRoots: [try AppStoreVectors.testRoot()])
        XCTAssertEqual(chainCode {
            try verifier.verify(leafDER: AppStoreVectors.der(AppStoreVectors.chain().invalidOIDLeafPEM),
                                intermediateDER: AppStoreVectors.der(AppStoreVectors.chain().intermediatePEM),
                                at: AppStoreVectors.testDate)
        }, "invalid_chain")
    }

    func testInvalidOIDIntermediateIsRefused() throws {
        let verifier = ChainVerifier(trustedRoots: [try AppStoreVectors.testRoot()])
        XCTAssertEqual(chainCode {
            try verifier.verify(leafDER: AppStoreVectors.der(AppStoreVectors.chain().invalidIntermediateLeafPEM),
                                intermediateDER: AppStoreVectors.der(AppStoreVectors.chain().invalidOIDIntermediatePEM),
                                at: AppStoreVectors.testDate)
        }, "invalid_chain")
    }

    func testSwappedOrMismatchedCertificatesAreRefused() throws {
        let verifier = ChainVerifier(trustedRoots: [try AppStoreVectors.testRoot()])
        let chain = try AppStoreVectors.chain()
        let leaf = try AppStoreVectors.der(chain.leafPEM)
        let intermediate = try AppStoreVectors.der(chain.intermediatePEM)
        let ca = try AppStoreVectors.der(chain.rootPEM)
        for (l, i) in [(intermediate, leaf), (leaf, leaf), (intermediate, intermediate), (leaf, ca), ([UInt8](), intermediate),
                       (leaf, Array(intermediate.dropLast())), (leaf + [0], intermediate)] {
            XCTAssertEqual(chainCode { try verifier.verify(leafDER: l, intermediateDER: i, at: AppStoreVectors.testDate) },
                           "invalid_chain")
        }
    }

    func testAppleMockSignedTransactionVerifiesAgainstAppleTestRootOnly() throws {
        let compact = try AppStoreVectors.text("mock-signed/transactionInfo").trimmingCharacters(in: .whitespacesAndNewlines)
        let payload = try JWSVerifier(trustedRoots: [try AppStoreVectors.appleTestRoot()]).verifyTransaction(compact)
        XCTAssertEqual(payload.environment, "Sandbox")
        XCTAssertEqual(payload.bundleId, "com.example")
        XCTAssertEqual(payload.signedDate, JWSTransactionDecodedPayload.date(milliseconds: 1_672_956_154_000))
        XCTAssertNil(payload.productId)

        for other in [try AppStoreVectors.appleRoot(), try AppStoreVectors.testRoot()] {
            XCTAssertEqual(chainCode { _ = try JWSVerifier(trustedRoots: [other]).verifyTransaction(compact) }, "invalid_chain")
        }
        XCTAssertEqual(chainCode {
            _ = try JWSVerifier(trustedRoots: [try AppStoreVectors.appleTestRoot()])
                .verifyTransaction(compact, chainValidationDate: ISO8601DateFormatter().date(from: "2040-01-01T00:00:00Z")!)
        }, "invalid_chain")
        // Lacks productId, so no policy accepts it.
        let policy = SubscriptionPolicy(bundleId: "com.example", productIds: ["pro"], environments: ["Sandbox"])
        XCTAssertThrowsError(try policy.evaluate(payload, ownerAccountId: AppStoreVectors.ownerAccountId, now: Date())) {
            XCTAssertEqual($0 as? PolicyError, .wrongProduct)
        }
    }
}
