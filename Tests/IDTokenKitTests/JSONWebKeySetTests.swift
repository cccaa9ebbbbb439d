import IDTokenKit
import IDTokenKitTesting
import LedgerModel
import StoreKitJWS
import XCTest

/// Which members of a JWKS become keys, pinned to which algorithm, and which are left out.
final class JSONWebKeySetTests: XCTestCase {
    private func set(_ keys: [JSONObject]) throws -> JSONWebKeySet { try JSONWebKeySet(json: TestSigningKey.keySet(keys)) }

    private func skipReason(_ key: JSONObject) throws -> String? {
        let parsed = try set([key])
        XCTAssertTrue(parsed.keys.isEmpty)
        return parsed.skipped.first?.reason
    }

    func testAlgorithmIsPinnedFromAlgOrFromTheKeyType() throws {
        let parsed = try set([Fixtures.rsa.jwk(includeAlg: false), Fixtures.ec.jwk(), ])
        XCTAssertEqual(parsed["rsa-1"]?.algorithm, .rs256)
        XCTAssertEqual(parsed["rsa-1"]?.bits, 2048)
        XCTAssertEqual(parsed["ec-1"]?.algorithm, .es256)
        XCTAssertEqual(parsed["ec-1"]?.bits, 256)
        XCTAssertTrue(parsed.skipped.isEmpty)
    }

    func testAppleShapedSetIsRead() throws {
        // The shape of https://appleid.apple.com/auth/keys: RSA keys with kid, use, alg, n, e.
        let keys = try (1...3).map { try TestSigningKey.rsa(keyID: "apple-\($0)").jwk() }
        XCTAssertEqual(try set(keys).keys.count, 3)
    }

    func testKeysThatAreNotVerificationKeysAreSkipped() throws {
        XCTAssertEqual(try skipReason(Fixtures.rsa.jwk(extra: ["use": "enc"])), "use is not sig")
        XCTAssertEqual(try skipReason(Fixtures.rsa.jwk(extra: ["key_ops": .array(["encrypt"])])), "key_ops lacks verify")
        XCTAssertNotNil(try set([Fixtures.rsa.jwk(extra: ["key_ops": .array(["verify"])])])["rsa-1"])
        XCTAssertEqual(try skipReason(Fixtures.rsa.jwk(alg: "RS384")), "algorithm RS384 is not RS256 or ES256")
        XCTAssertEqual(try skipReason(Fixtures.rsa.jwk(alg: "RSA-OAEP")), "algorithm RSA-OAEP is not RS256 or ES256")
        XCTAssertEqual(try skipReason(Fixtures.rsa.jwk(alg: "HS256")), "algorithm HS256 is not RS256 or ES256")
        XCTAssertEqual(try skipReason(Fixtures.rsa.jwk(alg: "ES256")), "alg ES256 does not fit an RSA key")
        XCTAssertEqual(try skipReason(Fixtures.ec.jwk(alg: "RS256")), "alg RS256 does not fit a P-256 key")
        XCTAssertEqual(try skipReason(Fixtures.ec.jwk(extra: ["crv": "P-384"])), "curve is not P-256")
        XCTAssertEqual(try skipReason(["kty": "oct", "kid": "h", "k": "c2VjcmV0"]), "holds private key material (k)")
        XCTAssertEqual(try skipReason(["kty": "OKP", "kid": "ed", "crv": "Ed25519", "x": "AAAA"]), "key type OKP")
        XCTAssertEqual(try skipReason(Fixtures.rsa.jwk(extra: ["kid": .null])), "no kid")
        XCTAssertEqual(try skipReason(Fixtures.rsa.jwk(extra: ["kid": ""])), "no kid")
        XCTAssertEqual(try skipReason(Fixtures.rsa.jwk(extra: ["d": "AQAB"])), "holds private key material (d)")
        XCTAssertEqual(try skipReason(Fixtures.rsa.jwk(extra: ["alg": 5])), "alg is not a string")
    }

    func testWeakOrBrokenNumbersAreSkipped() throws {
        XCTAssertEqual(try skipReason(Fixtures.weakRSA.jwk()), "RSA modulus of 512 bits, fewer than 2048")
        XCTAssertEqual(try skipReason(try TestSigningKey.rsa(bits: 1024, keyID: "k").jwk()), "RSA modulus of 1024 bits, fewer than 2048")
        XCTAssertEqual(try skipReason(Fixtures.rsa.jwk(extra: ["e": "AQAA"])), "RSA exponent must be odd, at least 3 and at most 32 bits")
        XCTAssertEqual(try skipReason(Fixtures.rsa.jwk(extra: ["e": "AQ"])), "RSA exponent must be odd, at least 3 and at most 32 bits")
        XCTAssertEqual(try skipReason(Fixtures.rsa.jwk(extra: ["n": "AQAB=="])), "n is not canonical base64url")
        XCTAssertEqual(try skipReason(Fixtures.rsa.jwk(extra: ["n": 5])), "no n")
        // A point off the curve: y + 1.
        var y = Base64Codec.decode(Array(Fixtures.ec.jwk()["y"]!.stringValue!.utf8), alphabet: .url)!
        y[31] ^= 1
        XCTAssertEqual(try skipReason(Fixtures.ec.jwk(extra: ["y": .string(Base64Codec.encode(y, alphabet: .url))])),
                       "OpenSSL refused the key")
        XCTAssertEqual(try skipReason(Fixtures.ec.jwk(extra: ["x": "AAAA"])), "P-256 coordinates must be 32 bytes each")
        // A modulus with a leading zero byte is still read.
        let n = [0] + Fixtures.rsa.bigNumber("n")
        XCTAssertNotNil(try set([Fixtures.rsa.jwk(extra: ["n": .string(Base64Codec.encode(n, alphabet: .url))])])["rsa-1"])
    }

    func testFirstKeyOfARepeatedKidWins() throws {
        let parsed = try set([Fixtures.rsa.jwk(), Fixtures.ec.jwk(extra: ["kid": "rsa-1"])])
        XCTAssertEqual(parsed["rsa-1"]?.algorithm, .rs256)
        XCTAssertEqual(parsed.skipped, [JSONWebKey.Skip(keyID: "rsa-1", reason: "a key with this kid comes earlier")])
    }

    func testDocumentsThatAreNotKeySetsAreErrors() {
        for text in ["", "[]", "{}", #"{"keys":{}}"#, #"{"keys":[],"keys":[]}"#, "not json"] {
            XCTAssertThrowsError(try JSONWebKeySet(json: Array(text.utf8)), text)
        }
        XCTAssertEqual(try JSONWebKeySet(json: Array(#"{"keys":[]}"#.utf8)).keys.count, 0)
        XCTAssertEqual(try JSONWebKeySet(json: Array(#"{"keys":[1,"x",null]}"#.utf8)).skipped.count, 3)
        let many = TestSigningKey.keySet([JSONObject](repeating: ["kty": "oct"], count: JSONWebKeySet.maximumKeys + 1))
        XCTAssertThrowsError(try JSONWebKeySet(json: many))
        XCTAssertThrowsError(try JSONWebKeySet(json: [UInt8](repeating: 0x20, count: JSONWebKeySet.maximumSize + 1)))
    }
}
