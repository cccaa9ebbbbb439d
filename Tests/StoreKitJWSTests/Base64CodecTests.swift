import StoreKitJWS
import XCTest

final class Base64CodecTests: XCTestCase {
    private func url(_ s: String) -> [UInt8]? { Base64Codec.decode(Array(s.utf8), alphabet: .url) }
    private func std(_ s: String) -> [UInt8]? { Base64Codec.decode(Array(s.utf8), alphabet: .standard) }

    func testRoundTripsEveryLength() {
        for length in 0..<40 {
            let bytes = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 250) }
            for alphabet in [Base64Codec.Alphabet.url, .standard] {
                let text = Base64Codec.encode(bytes, alphabet: alphabet)
                XCTAssertEqual(Base64Codec.decode(Array(text.utf8), alphabet: alphabet), bytes)
            }
            XCTAssertEqual(Base64Codec.encode(bytes, alphabet: .standard),
                           Data(bytes).base64EncodedString())
        }
    }

    func testURLRejectsPaddingStandardAlphabetAndWhitespace() {
        XCTAssertEqual(url("-_8"), [0xFB, 0xFF])
        XCTAssertNil(url("+/8"))
        XCTAssertNil(url("QQ=="))
        XCTAssertNil(url("QQ "))
        XCTAssertNil(url("Q Q"))
        XCTAssertNil(url("QQ\n"))
        XCTAssertNil(url("Q"))          // length 1 mod 4
    }

    func testRejectsNonCanonicalTrailingBits() {
        XCTAssertEqual(url("QQ"), [0x41])
        XCTAssertNil(url("QR"))         // low 4 bits set
        XCTAssertEqual(url("QUE"), [0x41, 0x41])
        XCTAssertNil(url("QUF"))        // low 2 bits set
        XCTAssertNil(std("QR=="))
    }

    func testStandardRequiresExactPadding() {
        XCTAssertEqual(std("QQ=="), [0x41])
        XCTAssertNil(std("QQ"))
        XCTAssertNil(std("QQ="))
        XCTAssertNil(std("QUE=="))
        XCTAssertNil(std("Q==="))
        XCTAssertNil(std("-_8="))
        XCTAssertNil(std("QQ==QQ=="))
        XCTAssertEqual(std(""), [])
    }
}
