import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import StoreKitJWS
import XCTest

/// The portable SHA-256 and P-256 verifier against OpenSSL.
final class P256VerifierTests: XCTestCase {
    func testSHA256MatchesOpenSSL() {
        XCTAssertEqual(SHA256.digest(Array("abc".utf8)).map { String(format: "%02x", $0) }.joined(),
                       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        // Against OpenSSL across the padding boundaries (TokenSecret hashes text as UTF-8).
        let letters = Array("abcdefghijklmnopqrstuvwxyz0123456789")
        for length in [0, 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 1000] {
            let text = String((0..<length).map { _ in letters.randomElement()! })
            XCTAssertEqual(SHA256.digest(Array(text.utf8)), TokenSecret.sha256(text), "length \(length)")
        }
        let accented = String(repeating: "é", count: 100)
        XCTAssertEqual(SHA256.digest(Array(accented.utf8)), TokenSecret.sha256(accented))
    }

    func testSignaturesFromOpenSSLVerifyAndForgeriesDoNot() throws {
        for round in 0..<8 {
            let signer = try ES256Signer(privateKeyPEM: ES256Signer.generatePrivateKeyPEM())
            let (x, y) = try signer.publicKeyCoordinates()
            let key = try XCTUnwrap(P256PublicKey(x: x, y: y))
            let message = Array("entitlement \(round)".utf8)
            let signature = try signer.signature(for: message)
            let digest = SHA256.digest(message)
            XCTAssertTrue(key.isValidSignature(signature, digest: digest), "round \(round)")

            var flipped = signature
            flipped[Int.random(in: 0..<64)] ^= 0x01
            XCTAssertFalse(key.isValidSignature(flipped, digest: digest))
            XCTAssertFalse(key.isValidSignature(signature, digest: SHA256.digest(message + [0])))
            let other = try ES256Signer(privateKeyPEM: ES256Signer.generatePrivateKeyPEM()).publicKeyCoordinates()
            XCTAssertFalse(try XCTUnwrap(P256PublicKey(x: other.x, y: other.y)).isValidSignature(signature, digest: digest))
        }
        let signer = try ES256Signer(privateKeyPEM: ES256Signer.generatePrivateKeyPEM())
        let (x, y) = try signer.publicKeyCoordinates()
        let key = try XCTUnwrap(P256PublicKey(x: x, y: y))
        let digest = SHA256.digest([1, 2, 3])
        let order: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                              0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51]
        let zero = [UInt8](repeating: 0, count: 32)
        for bad in [zero + zero, zero + order, order + order, [UInt8](repeating: 0xFF, count: 64), [UInt8](repeating: 1, count: 63)] {
            XCTAssertFalse(key.isValidSignature(bad, digest: digest))
        }
        XCTAssertNil(P256PublicKey(x: x, y: x == y ? zero : y.map { $0 ^ 0x55 }), "a point off the curve")
        XCTAssertNil(P256PublicKey(x: [UInt8](repeating: 0xFF, count: 32), y: y), "x ≥ p")
    }
}
