import Foundation
import StoreKitJWS
import XCTest

/// End-to-end JWS verification: trust anchors, tampering, signature encoding.
final class JWSSignatureTests: XCTestCase {
    private var verifier: JWSVerifier!
    private var signer: ES256Signer!
    private var chain: [String] = []

    override func setUpWithError() throws {
        verifier = JWSVerifier(trustedRoots: [try AppStoreVectors.testRoot()])
        signer = try AppStoreVectors.signer()
        chain = try AppStoreVectors.testChain()
    }

    private func code(_ compact: String, verifier: JWSVerifier? = nil) -> String? {
        do { _ = try (verifier ?? self.verifier).verifyTransaction(compact); return nil }
        catch let error as JWSError { return error.code }
        catch { return "other: \(error)" }
    }

    private func segments(_ jws: String) -> [String] { jws.split(separator: ".").map(String.init) }

    func testSignedPayloadRoundTrips() throws {
        let payload = AppStoreVectors.goodPayload()
        let jws = try signer.sign(payload: payload, x5c: chain)
        XCTAssertEqual(try verifier.verifyTransaction(jws), payload)
        XCTAssertEqual(try verifier.verifyTransaction(jws, chainValidationDate: Date(timeIntervalSince1970: 1_800_000_000)), payload)
    }

    func testChainIsValidatedAtSignedDate() throws {
        var payload = AppStoreVectors.goodPayload()
        payload.signedDate = ISO8601DateFormatter().date(from: "2050-01-01T00:00:00Z")   // the chain ends 2049
        XCTAssertEqual(code(try signer.sign(payload: payload, x5c: chain)), "invalid_chain")
        payload.signedDate = nil
        XCTAssertEqual(code(try signer.sign(payload: payload, x5c: chain)), "malformed")
        XCTAssertNoThrow(try verifier.verifyTransaction(try signer.sign(payload: payload, x5c: chain),
                                                        chainValidationDate: AppStoreVectors.testDate))
    }

    func testCarriedRootIsNeverTrusted() throws {
        let jws = try signer.sign(payload: AppStoreVectors.goodPayload(), x5c: chain)
        XCTAssertEqual(code(jws, verifier: JWSVerifier(trustedRoots: [try AppStoreVectors.appleRoot()])), "invalid_chain")
        XCTAssertEqual(code(jws, verifier: JWSVerifier(trustedRoots: [])), "invalid_chain")
    }

    func testThirdCertificateIsIgnoredForTrust() throws {
        // x5c[2] only has to be a certificate; trust comes from the configured roots.
        let g3 = Base64Codec.encode(try AppStoreVectors.bytes("AppleRootCA-G3.der"), alphabet: .standard)
        let jws = try signer.sign(payload: AppStoreVectors.goodPayload(), x5c: [chain[0], chain[1], g3])
        XCTAssertNil(code(jws))
    }

    func testInvalidOIDChainsAreRefusedInJWS() throws {
        // The invalid-OID leaves share the good leaf's key, so the signature itself would verify.
        let generated = try AppStoreVectors.chain()
        let badLeaf = [try AppStoreVectors.x5c(generated.invalidOIDLeafPEM), chain[1], chain[2]]
        XCTAssertEqual(code(try signer.sign(payload: AppStoreVectors.goodPayload(), x5c: badLeaf)), "invalid_chain")
        let badIntermediate = [try AppStoreVectors.x5c(generated.invalidIntermediateLeafPEM),
                               try AppStoreVectors.x5c(generated.invalidOIDIntermediatePEM), chain[2]]
        XCTAssertEqual(code(try signer.sign(payload: AppStoreVectors.goodPayload(), x5c: badIntermediate)), "invalid_chain")
        let swapped = [chain[1], chain[0], chain[2]]
        XCTAssertEqual(code(try signer.sign(payload: AppStoreVectors.goodPayload(), x5c: swapped)), "invalid_chain")
    }

    func testTamperedHeaderIsRefused() throws {
        let jws = try signer.sign(payload: AppStoreVectors.goodPayload(), x5c: chain)
        let parts = segments(jws)
        var header = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(Base64Codec.decode(Array(parts[0].utf8), alphabet: .url)!)) as? [String: Any])
        header["kid"] = "attacker"
        let forged = Base64Codec.encode(Array(try JSONSerialization.data(withJSONObject: header)), alphabet: .url)
        XCTAssertEqual(code([forged, parts[1], parts[2]].joined(separator: ".")), "invalid_signature")
    }

    func testTamperedPayloadIsRefused() throws {
        let jws = try signer.sign(payload: AppStoreVectors.goodPayload(), x5c: chain)
        let parts = segments(jws)
        var payload = AppStoreVectors.goodPayload()
        payload.expiresDate = Date(timeIntervalSince1970: 4_000_000_000)
        let forged = Base64Codec.encode(Array(try JSONEncoder().encode(payload)), alphabet: .url)
        XCTAssertEqual(code([parts[0], forged, parts[2]].joined(separator: ".")), "invalid_signature")
        // A payload signed for another token cannot be spliced in either.
        let other = segments(try signer.sign(payload: JWSTransactionDecodedPayload(signedDate: AppStoreVectors.testDate), x5c: chain))
        XCTAssertEqual(code([parts[0], other[1], parts[2]].joined(separator: ".")), "invalid_signature")
    }

    func testEveryFlippedSignatureBitIsRefused() throws {
        let jws = try signer.sign(payload: AppStoreVectors.goodPayload(), x5c: chain)
        let parts = segments(jws)
        let raw = try XCTUnwrap(Base64Codec.decode(Array(parts[2].utf8), alphabet: .url))
        XCTAssertEqual(raw.count, 64)
        for bit in stride(from: 0, to: 512, by: 7) {
            var flipped = raw
            flipped[bit / 8] ^= UInt8(1 << (bit % 8))
            let forged = [parts[0], parts[1], Base64Codec.encode(flipped, alphabet: .url)].joined(separator: ".")
            XCTAssertEqual(code(forged), "invalid_signature", "bit \(bit)")
        }
    }

    func testSignatureEncodingMustBeRaw64Bytes() throws {
        let jws = try signer.sign(payload: AppStoreVectors.goodPayload(), x5c: chain)
        let parts = segments(jws)
        let raw = Base64Codec.decode(Array(parts[2].utf8), alphabet: .url)!
        // n, the P-256 group order: r = n is out of range.
        let order: [UInt8] = [0xFF, 0xFF, 0xFF, 0xFF, 0x00, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                              0xBC, 0xE6, 0xFA, 0xAD, 0xA7, 0x17, 0x9E, 0x84, 0xF3, 0xB9, 0xCA, 0xC2, 0xFC, 0x63, 0x25, 0x51]
        let variants: [[UInt8]] = [
            Array(raw.prefix(63)), raw + [0], Array(raw.prefix(32)), raw + raw,
            [UInt8](repeating: 0, count: 64), [UInt8](repeating: 0xFF, count: 64),
            order + Array(raw.suffix(32)), Array(raw.prefix(32)) + order,
            derEncoded(raw),
        ]
        for (index, signature) in variants.enumerated() {
            let forged = [parts[0], parts[1], Base64Codec.encode(signature, alphabet: .url)].joined(separator: ".")
            XCTAssertEqual(code(forged), "invalid_signature", "variant \(index)")
        }
    }

    /// The same signature as an ASN.1 DER `ECDSA-Sig-Value` (must not be accepted).
    private func derEncoded(_ raw: [UInt8]) -> [UInt8] {
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            var value = Array(bytes.drop { $0 == 0 })
            if value.first.map({ $0 & 0x80 != 0 }) ?? true { value.insert(0, at: 0) }
            return [0x02, UInt8(value.count)] + value
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        return [0x30, UInt8(body.count)] + body
    }

    func testSignerProducesVerifiableRawSignatures() throws {
        let message = Array("header.payload".utf8)
        let a = try signer.signature(for: message)
        let b = try signer.signature(for: message)
        XCTAssertEqual(a.count, 64)
        XCTAssertEqual(b.count, 64)
        XCTAssertNotEqual(a, b)   // randomized ECDSA
    }

    func testSignerRejectsBadKeys() {
        XCTAssertThrowsError(try ES256Signer(privateKeyPEM: "not a key"))
        XCTAssertThrowsError(try ES256Signer(privateKeyPath: "/nonexistent/key.pem"))
        // A 256-bit EC key on the wrong curve (secp256k1) is not an ES256 key.
        let secp256k1 = """
-----BEGIN EC PRIVATE KEY-----
MHQCAQEEIPiLuLxAfel28aI2Z1rEuX2oMP2yTV86D65ZZQzpKAV8oAcGBSuBBAAK
oUQDQgAE3Qi7RcER9InqrgHOe72bLU91/W3NR4g/E6YnvV2vcZqn/+waQODKYG/7
0496t2wGKbv6KH0tLi/Wz7SiDALySg==
-----END EC PRIVATE KEY-----
"""
        XCTAssertThrowsError(try ES256Signer(privateKeyPEM: secp256k1))
    }
}
