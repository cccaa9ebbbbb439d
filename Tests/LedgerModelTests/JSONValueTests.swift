import XCTest
@testable import LedgerModel

final class JSONValueTests: XCTestCase {
    func testParsesAndKeepsOrder() throws {
        let v = try JSONValue.parse(#"{"b":1,"a":[true,null,"x\u00e9\ud83d\ude00"],"c":-0.5}"#)
        XCTAssertEqual(v.objectValue?.keys, ["b", "a", "c"])
        XCTAssertEqual(v["a"]?.arrayValue?[2].stringValue, "xé😀")
        XCTAssertEqual(v["c"], .number("-0.5"))
        XCTAssertEqual(v.serializedString, #"{"b":1,"a":[true,null,"xé😀"],"c":-0.5}"#)
    }

    func testIntegersAreExact() throws {
        XCTAssertEqual(try JSONValue.parse("9223372036854775807"), .int(Int64.max))
        XCTAssertEqual(try JSONValue.parse("9223372036854775808"), .number("9223372036854775808"))
        XCTAssertEqual(try JSONValue.parse("1e2"), .number("1e2"))
    }

    func testRejectsHostileInput() {
        let bad: [[UInt8]] = [
            Array(#"{"a":1,"a":2}"#.utf8), Array("{".utf8), Array("[1,]".utf8), Array("01".utf8),
            Array(#""\ud800""#.utf8), [34, 0xC3, 0x28, 34], [34, 0xED, 0xA0, 0x80, 34], [34, 0xC0, 0xAF, 34],
            Array("{} x".utf8), Array("\"a\nb\"".utf8), Array(String(repeating: "[", count: 100).utf8),
            Array("nul".utf8), [], Array("NaN".utf8),
        ]
        for b in bad { XCTAssertThrowsError(try JSONValue.parse(b), String(decoding: b, as: UTF8.self)) }
    }

    func testEscapesControlCharacters() {
        XCTAssertEqual(JSONValue.string("a\"\\\n\u{1}").serializedString, #""a\"\\\n\u0001""#)
    }
}
