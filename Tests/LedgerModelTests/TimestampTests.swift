import Foundation
import XCTest
@testable import LedgerModel

final class TimestampTests: XCTestCase {
    func testRoundTrip() {
        XCTAssertEqual(Timestamp.format(ms: 0), "1970-01-01T00:00:00.000Z")
        let t = Timestamp.parse("2026-12-02T10:19:10.123Z")!
        XCTAssertEqual(Timestamp.format(ms: t), "2026-12-02T10:19:10.123Z")
        XCTAssertEqual(Timestamp.parse("2024-02-29T23:59:59Z"), Timestamp.parse("2024-02-29T23:59:59.000Z"))
    }

    func testFormatMatchesTheCalendar() {
        let f = ISO8601DateFormatter()
        f.formatOptions = [.withInternetDateTime]
        f.timeZone = TimeZone(identifier: "UTC")
        var g = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let ms = Int64.random(in: 0...253_402_300_799_999, using: &g)   // 1970 … 9999-12-31T23:59:59.999Z
            // Whole seconds from Foundation's calendar (exact in a Double), milliseconds appended.
            let seconds = f.string(from: Date(timeIntervalSince1970: Double(ms / 1000)))
            let expected = String(seconds.dropLast()) + "." + String(String(1000 + ms % 1000).dropFirst()) + "Z"
            XCTAssertEqual(Timestamp.format(ms: ms), expected, "\(ms)")
            XCTAssertEqual(Timestamp.parse(Timestamp.format(ms: ms)), ms)
        }
        XCTAssertEqual(Timestamp.format(ms: 253_402_300_799_999), "9999-12-31T23:59:59.999Z")
    }

    func testOffsetsAndFractions() {
        XCTAssertEqual(Timestamp.parse("2026-12-02T12:19:10.123456+02:00"), Timestamp.parse("2026-12-02T10:19:10.123Z"))
        XCTAssertEqual(Timestamp.parse("2026-12-02T10:19:10.1Z")! % 1000, 100)
    }

    func testRejects() {
        for bad in ["2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-12-02 10:19:10Z", "2026-12-02T10:19:10",
                    "2026-12-02T10:19:10.Z", "1969-12-31T23:59:59Z", "2026-12-02T24:00:00Z", "x"] {
            XCTAssertNil(Timestamp.parse(bad), bad)
        }
    }

    func testNothingOutsideYears0000To9999() {
        XCTAssertNil(Timestamp.parse("9999-12-31T23:30:00-01:00"), "year 10000 once the offset is applied")
        XCTAssertEqual(Timestamp.parse("9999-12-31T23:59:59.999Z"), Timestamp.maxMs)
        XCTAssertEqual(Timestamp.format(ms: Timestamp.maxMs + 1), "9999-12-31T23:59:59.999Z")
        XCTAssertEqual(Timestamp.format(ms: Int64.max), "9999-12-31T23:59:59.999Z")
        XCTAssertEqual(Timestamp.format(ms: Int64.min), "0000-01-01T00:00:00.000Z")
        XCTAssertEqual(Timestamp.format(ms: -1), "1969-12-31T23:59:59.999Z")
        XCTAssertEqual(LWW.stamp(now: 1_000, newestSeen: Timestamp.maxMs), Timestamp.maxMs, "an edit after the last instant stays on it")
    }

    func testClockSkewAllowance() {
        XCTAssertFalse(Timestamp.isTooFarAhead(1_000 + 86_400_000, now: 1_000))
        XCTAssertTrue(Timestamp.isTooFarAhead(1_001 + 86_400_000, now: 1_000))
        XCTAssertTrue(Timestamp.isTooFarAhead(Timestamp.maxMs, now: Timestamp.nowMs()))
    }
}
