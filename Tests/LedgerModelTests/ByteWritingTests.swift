import LedgerModel
import XCTest

final class ByteWritingTests: XCTestCase {
    static let integers: [Int64] = [0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 65535, 1_000_000_007,
                                    -1, -9, -10, -12345, Int64.max, Int64.max - 1, Int64.min, Int64.min + 1]

    func testDecimalsAreSpelledAsStringDoes() {
        for v in Self.integers {
            var out: [UInt8] = [7]
            JSONValue.writeInt(v, into: &out)
            XCTAssertEqual(out, [7] + Array(String(v).utf8), "writeInt \(v)")
            var written: [UInt8] = [7]
            written.appendWriting(maxCount: 21) { $0.putDecimal(v) }
            XCTAssertEqual(written, [7] + Array(String(v).utf8), "putDecimal \(v)")
        }
        XCTAssertEqual(JSONValue.int(-42).serialized(), Array("-42".utf8))
    }

    func testJSONStringsAreEscapedAsTheSerializerDoes() {
        let strings = ["", "plain", "quote \" and back\\slash", "line\nfeed\rtab\t", "\u{0}\u{1}\u{1f}\u{7f}",
                       "/v1/households/\"x\"/children?q=\\", "Zoë 👩‍👧", String(repeating: "\u{1}", count: 40)]
        for s in strings {
            var expected: [UInt8] = []
            JSONValue.writeString(s, into: &expected)
            var written: [UInt8] = [1, 2]
            written.appendWriting(maxCount: ByteWriter.jsonStringBound(s.utf8.count)) { $0.putJSONString(s) }
            XCTAssertEqual(written, [1, 2] + expected, s)
            // And what was written parses back to the same string.
            XCTAssertEqual(try JSONValue.parse(Array(written.dropFirst(2))), .string(s))
        }
    }

    func testLiteralsStringsAndTimestamps() {
        var out: [UInt8] = Array("a".utf8)
        out.append(literal: "bc")
        out.append(utf8: "dé")
        out.appendWriting(maxCount: 64) { w in
            w.put(literal: "[")
            w.putTimestamp(ms: 1_764_720_000_123)
            w.put(utf8: "]")
            w.put([33])
        }
        XCTAssertEqual(String(decoding: out, as: UTF8.self), "abcdé[\(Timestamp.format(ms: 1_764_720_000_123))]!")
        XCTAssertEqual(JSONValue.array([.null, .bool(true), .bool(false), .number("1.5e3")]).serializedString,
                       "[null,true,false,1.5e3]")
    }
}
