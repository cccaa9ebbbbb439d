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

    /// The eight-bytes-at-a-time escape test against a byte-by-byte one: every byte value at
    /// every position of strings up to 19 bytes (the words and the tail), among bytes that
    /// sit next to the ones that need an escape.
    func testEscapeScanFindsEveryByteThatNeedsAnEscape() {
        func reference(_ bytes: [UInt8]) -> Bool { bytes.contains { $0 < 0x20 || $0 == 34 || $0 == 92 } }
        let fillers: [UInt8] = [0x20, 0x21, 0x23, 0x5B, 0x5D, 0x7F, 0x80, 0xA2, 0xDC, 0xFF, 0x61]
        for length in 0..<20 {
            for filler in fillers {
                let plain = [UInt8](repeating: filler, count: length)
                XCTAssertFalse(plain.withUnsafeBufferPointer { ByteWriter.needsJSONEscape($0) }, "\(length) × \(filler)")
                for position in 0..<length {
                    for byte in 0...255 {
                        var bytes = plain
                        bytes[position] = UInt8(byte)
                        XCTAssertEqual(bytes.withUnsafeBufferPointer { ByteWriter.needsJSONEscape($0) }, reference(bytes),
                                       "byte \(byte) at \(position) of \(length) among \(filler)")
                    }
                }
            }
        }
        // Not at the start of its buffer (the words are read unaligned).
        let shifted: [UInt8] = Array("x/v1/households/abc\"".utf8)
        XCTAssertTrue(shifted.withUnsafeBufferPointer { ByteWriter.needsJSONEscape(UnsafeBufferPointer(rebasing: $0[1...])) })
        XCTAssertFalse(shifted.withUnsafeBufferPointer { ByteWriter.needsJSONEscape(UnsafeBufferPointer(rebasing: $0[1..<19])) })
    }

    /// The bound of a string is exact without escapes and covers every escape otherwise.
    func testStringBoundsCoverWhatIsWritten() {
        for s in ["", "plain", "3f0a9db7-21c5-4f2a-9b1e-0c7d3a1e2b44", "quote \" here", "\u{1}", "Zoë 👩‍👧",
                  String(repeating: "\u{1}", count: 40), String(repeating: "ab\\", count: 9)] {
            var written: [UInt8] = []
            written.appendWriting(maxCount: ByteWriter.jsonStringBound(s)) { $0.putJSONString(s) }
            XCTAssertLessThanOrEqual(written.count, ByteWriter.jsonStringBound(s), s)
            if !s.utf8.contains(where: { $0 < 0x20 || $0 == 34 || $0 == 92 }) {
                XCTAssertEqual(written.count, ByteWriter.jsonStringBound(s), s)
            }
        }
        XCTAssertEqual(String(writing: 12) { w in
            w.put(literal: "/a/")
            w.put(utf8: "é")
            w.putDecimal(42)
        }, "/a/é42")
        XCTAssertEqual(String(writing: 0) { _ in }, "")
        XCTAssertEqual([UInt8](writing: 64) { w in
            w.put(literal: "{\"a\":")
            w.putJSONString("x\"y")
            w.put(125)
        }, Array(#"{"a":"x\"y"}"#.utf8))
        XCTAssertEqual([UInt8](writing: 0) { _ in }, [])
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
