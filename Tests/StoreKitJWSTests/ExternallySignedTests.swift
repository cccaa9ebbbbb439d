import Foundation
import StoreKitJWS
import XCTest

/// Tokens signed outside Swift (openssl CLI, fuzz seeds) verify: the signature format interoperates.
/// The seeds were signed with the key of Apple's test leaf, whose chain they carry, so they
/// verify against Apple's test root (`Tests/Fixtures/app-store/mock-signed/testCA.pem`).
final class ExternallySignedTests: XCTestCase {
    func testFuzzSeedsSignedWithOpenSSLVerify() throws {
        let seeds = AppStoreVectors.repositoryRoot.appendingPathComponent("fuzz/JWS/seeds")
        let verifier = JWSVerifier(trustedRoots: [try AppStoreVectors.appleTestRoot()])
        for name in ["signed-good", "signed-revoked", "signed-xcode", "signed-minimal"] {
            let compact = try String(contentsOf: seeds.appendingPathComponent(name), encoding: .utf8)
            let payload = try verifier.verifyTransaction(compact)
            XCTAssertEqual(payload.signedDate, JWSTransactionDecodedPayload.date(milliseconds: 1_700_000_000_000), name)
        }
    }
}
