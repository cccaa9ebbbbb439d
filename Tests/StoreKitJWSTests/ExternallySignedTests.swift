import Foundation
import StoreKitJWS
import XCTest

/// Tokens signed outside Swift (openssl CLI, fuzz seeds) verify: the signature format interoperates.
final class ExternallySignedTests: XCTestCase {
    func testFuzzSeedsSignedWithOpenSSLVerify() throws {
        let seeds = AppStoreVectors.repositoryRoot.appendingPathComponent("fuzz/JWS/seeds")
        let verifier = JWSVerifier(trustedRoots: [try AppStoreVectors.testRoot()])
        for name in ["signed-good", "signed-revoked", "signed-xcode", "signed-minimal"] {
            let compact = try String(contentsOf: seeds.appendingPathComponent(name), encoding: .utf8)
            let payload = try verifier.verifyTransaction(compact)
            XCTAssertEqual(payload.signedDate, JWSTransactionDecodedPayload.date(milliseconds: 1_700_000_000_000), name)
        }
    }
}
