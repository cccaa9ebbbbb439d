import Foundation
import StoreKitJWS
import XCTest

/// Structure, algorithm and `x5c` shape checks.
final class JWSParsingTests: XCTestCase {
    private var verifier: JWSVerifier!
    private var signer: ES256Signer!
    private var chain: [String] = []
    private var payloadJSON: [UInt8] = []

    override func setUpWithError() throws {
        verifier = JWSVerifier(trustedRoots: [try AppStoreVectors.testRoot()])
        signer = try AppStoreVectors.signer()
        chain = try AppStoreVectors.testChain()
        payloadJSON = Array(try JSONEncoder().encode(AppStoreVectors.goodPayload()))
    }

    private func code(_ compact: String, file: StaticString = #filePath, line: UInt = #line) -> String? {
        do {
            _ = try verifier.verifyTransaction(compact)
            return nil
        } catch let error as JWSError {
            return error.code
        } catch {
            XCTFail("unexpected error \(error)", file: file, line: line)
            return "?"
        }
    }

    private func header(_ object: [String: Any]) throws -> [UInt8] {
        Array(try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]))
    }

    func testWellFormedTokenVerifies() throws {
        let jws = try signer.sign(payloadJSON: payloadJSON, x5c: chain)
        XCTAssertEqual(try verifier.verifyTransaction(jws), AppStoreVectors.goodPayload())
    }

    func testSegmentStructureIsMalformed() throws {
        let jws = try signer.sign(payloadJSON: payloadJSON, x5c: chain)
        let parts = jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let cases = [
            "", ".", "..", "...", "a.b", "a.b.c.d", jws + ".", "." + jws,
            parts[0] + ".." + parts[2], parts[0] + "." + parts[1] + ".", "." + parts[1] + "." + parts[2],
            parts[0] + "=." + parts[1] + "." + parts[2],
            parts[0] + "." + parts[1] + "." + parts[2] + "==",
            "+" + parts[0].dropFirst() + "." + parts[1] + "." + parts[2],
            parts[0] + "." + "/" + parts[1].dropFirst() + "." + parts[2],
            parts[0] + " ." + parts[1] + "." + parts[2],
            parts[0] + "." + parts[1] + "\n." + parts[2],
            " " + jws, jws + "\n",
            String(repeating: "A", count: 70_000) + "." + parts[1] + "." + parts[2],
        ]
        for (index, text) in cases.enumerated() {
            XCTAssertEqual(code(text), "malformed", "case \(index)")
        }
    }

    func testNonCanonicalTrailingBitsAreMalformed() throws {
        let jws = try signer.sign(payloadJSON: payloadJSON, x5c: chain)
        var parts = jws.split(separator: ".").map(String.init)
        // The raw signature is 64 bytes: 86 characters, the last carrying 2 unused bits.
        XCTAssertEqual(parts[2].count, 86)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
        let last = parts[2].removeLast()
        let value = alphabet.firstIndex(of: last)!
        parts[2].append(alphabet[value | 1])
        XCTAssertEqual(code(parts.joined(separator: ".")), "malformed")
    }

    func testHeaderAndPayloadMustBeJSONObjects() throws {
        for bad in ["not json", "[1,2]", "\"ES256\"", "{\"alg\":\"ES256\""] {
            XCTAssertEqual(code(try signer.sign(headerJSON: Array(bad.utf8), payloadJSON: payloadJSON)), "malformed", bad)
        }
        let header = ES256Signer.headerJSON(x5c: chain)
        for bad in ["nope", "[]", "{\"signedDate\":\"yesterday\"}", "{\"productId\":5,\"signedDate\":1700000000000}", "{}"] {
            XCTAssertEqual(code(try signer.sign(headerJSON: header, payloadJSON: Array(bad.utf8))), "malformed", bad)
        }
    }

    func testAlgorithmConfusionIsRefused() throws {
        for alg in ["none", "HS256", "RS256", "ES384", "es256", "ES256 ", ""] {
            let jws = try signer.sign(headerJSON: try header(["alg": alg, "x5c": chain]), payloadJSON: payloadJSON)
            XCTAssertEqual(code(jws), "unsupported_algorithm", alg)
        }
        XCTAssertEqual(code(try signer.sign(headerJSON: try header(["x5c": chain]), payloadJSON: payloadJSON)),
                       "unsupported_algorithm")
        XCTAssertEqual(code(try signer.sign(headerJSON: try header(["alg": 256, "x5c": chain]), payloadJSON: payloadJSON)),
                       "unsupported_algorithm")
        // An unsecured JWS (alg none, empty signature segment) is well-formed: its algorithm
        // is what is refused, with or without x5c.
        for object in [["alg": "none", "x5c": chain], ["alg": "none"]] as [[String: Any]] {
            let unsigned = Base64Codec.encode(try header(object), alphabet: .url) + "."
                + Base64Codec.encode(payloadJSON, alphabet: .url) + "."
            XCTAssertEqual(code(unsigned), "unsupported_algorithm")
        }
        // ES256 with an empty signature segment stays malformed.
        let emptySignature = Base64Codec.encode(try header(["alg": "ES256", "x5c": chain]), alphabet: .url) + "."
            + Base64Codec.encode(payloadJSON, alphabet: .url) + "."
        XCTAssertEqual(code(emptySignature), "malformed")
        let fakeMAC = Base64Codec.encode(try header(["alg": "HS256", "x5c": chain]), alphabet: .url) + "."
            + Base64Codec.encode(payloadJSON, alphabet: .url) + "." + Base64Codec.encode([UInt8](repeating: 7, count: 32), alphabet: .url)
        XCTAssertEqual(code(fakeMAC), "unsupported_algorithm")
    }

    func testX5CShapeIsInvalidChain() throws {
        let ca = chain[2]
        let shapes: [Any?] = [
            nil, "not-an-array", [String](), [chain[0]], Array(chain.prefix(2)), chain + [ca], chain + [ca, ca],
            [chain[0], chain[1], 42], [chain[0], "!!notbase64!!", ca],
            [chain[0].replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_"), chain[1], ca],
            [chain[0], Base64Codec.encode(Array("hello".utf8), alphabet: .standard), ca],
            [chain[0], chain[1], Base64Codec.encode(Array("not a certificate".utf8), alphabet: .standard)],
            [chain[0] + "AAAA", chain[1], ca],
        ]
        for (index, x5c) in shapes.enumerated() {
            var object: [String: Any] = ["alg": "ES256"]
            if let x5c { object["x5c"] = x5c }
            let jws = try signer.sign(headerJSON: try header(object), payloadJSON: payloadJSON)
            XCTAssertEqual(code(jws), "invalid_chain", "shape \(index)")
        }
    }

    func testCriticalHeaderIsRefused() throws {
        let jws = try signer.sign(headerJSON: try header(["alg": "ES256", "x5c": chain, "crit": ["exp"]]),
                                  payloadJSON: payloadJSON)
        XCTAssertEqual(code(jws), "malformed")
    }

    func testErrorCodes() {
        XCTAssertEqual(JWSError.malformed("x").code, "malformed")
        XCTAssertEqual(JWSError.unsupportedAlgorithm.code, "unsupported_algorithm")
        XCTAssertEqual(JWSError.invalidChain("x").code, "invalid_chain")
        XCTAssertEqual(JWSError.invalidSignature.code, "invalid_signature")
    }
}
