import XCTest
@testable import LedgerModel

final class JSONValueTests: XCTestCase {
    /// A transaction written straight to bytes (the answer to every transaction write) is
    /// byte for byte its JSON value serialized: escapes, nulls, extreme amounts and dates.
    func testTransactionWrittenDirectlyIsItsJSONSerialized() {
        let base = LedgerTransaction(id: "0f9b6a4e-8c1d-4f7a-9b2e-3d5c7a1e9f20", householdId: "h", childId: "c", amountCents: 150,
                                     note: "", source: .api, createdAt: 1_764_756_000_123, recordedAt: 1_764_756_000_456,
                                     authorAccountId: "a", reversesId: nil, reversedById: nil)
        var cases = [base]
        var t = base
        t.note = "quote \" backslash \\ newline \n tab \t cr \r bell \u{07} nul \u{0} é 🙂 </script>"
        t.amountCents = Int64.min
        t.reversesId = "r"
        cases.append(t)
        t.amountCents = Int64.max
        t.reversesId = nil
        t.reversedById = "0f9b6a4e-8c1d-5f7a-9b2e-3d5c7a1e9f20"
        t.source = .manual
        t.createdAt = 0
        t.recordedAt = -62_135_596_800_000  // 0001-01-01
        cases.append(t)
        t.note = String(repeating: "\u{1}", count: 1000)
        t.amountCents = -1
        cases.append(t)
        for tx in cases {
            var direct: [UInt8] = []
            direct.appendWriting(maxCount: tx.jsonBound) { tx.writeJSON(&$0) }
            XCTAssertEqual(String(decoding: direct, as: UTF8.self), tx.json.serializedString)
        }
    }

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
