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

    /// Keys are checked for duplicates by a look through the keys so far, then (from the
    /// 17th key) by a set; strings are read in place until an escape, a non-ASCII byte or
    /// a control byte, then byte by byte from there. Both ways give the same answers and
    /// the same error offsets.
    func testDuplicateKeysAndStringsInEveryWayTheyAreRead() throws {
        for n in [2, 15, 16, 17, 40] {
            let keys = (0..<n).map { "k\($0)" }
            let ok = "{" + keys.map { "\"\($0)\":1" }.joined(separator: ",") + "}"
            XCTAssertEqual(try JSONValue.parse(ok).objectValue?.keys, keys)
            for dup in [0, n - 1] {
                let text = String(ok.dropLast()) + ",\"k\(dup)\":2}"
                XCTAssertThrowsError(try JSONValue.parse(text)) { error in
                    XCTAssertEqual((error as? JSONParseError)?.message, "duplicate key \"k\(dup)\"", "\(n) keys")
                    XCTAssertEqual((error as? JSONParseError)?.offset, text.utf8.count - 3, "\(n) keys")  // just after the key
                }
            }
        }
        let strings = ["", "plain ascii", "esc\\\"aped", "tail é", "é head", "mid\\u00e9dle", "\\ud83d\\ude00 x", "a/b\\/c"]
        let expected = ["", "plain ascii", "esc\"aped", "tail é", "é head", "midédle", "😀 x", "a/b/c"]
        for (text, value) in zip(strings, expected) {
            XCTAssertEqual(try JSONValue.parse("\"" + text + "\""), .string(value), text)
        }
        for (bad, offset) in [(Array("\"abc".utf8), 4), (Array("\"ab\u{1}c\"".utf8), 3), ([34, 97, 0xC3, 0x28, 34], 2)] {
            XCTAssertThrowsError(try JSONValue.parse(bad)) { XCTAssertEqual(($0 as? JSONParseError)?.offset, offset) }
        }
    }

    func testEscapesControlCharacters() {
        XCTAssertEqual(JSONValue.string("a\"\\\n\u{1}").serializedString, #""a\"\\\n\u0001""#)
    }
}
