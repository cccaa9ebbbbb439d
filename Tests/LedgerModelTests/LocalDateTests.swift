import Foundation
import XCTest
@testable import LedgerModel

final class LocalDateTests: XCTestCase {
    func testParsesOnlyStrictCalendarDates() throws {
        let d = try XCTUnwrap(LocalDate("2026-12-04"))
        XCTAssertEqual([d.year, d.month, d.day], [2026, 12, 4])
        XCTAssertEqual(d.description, "2026-12-04")
        XCTAssertEqual(LocalDate("2028-02-29")?.day, 29)
        XCTAssertEqual(LocalDate("2000-02-29")?.day, 29)
        XCTAssertEqual(LocalDate("0001-01-01"), LocalDate.min)
        XCTAssertEqual(LocalDate("9999-12-31"), LocalDate.max)
        for bad in ["", "2026-2-3", "2026-02-3", "26-02-03", "2026-02-30", "2027-02-29", "1900-02-29", "2026-04-31",
                    "2026-13-01", "2026-00-10", "2026-01-00", "2026-01-32", "0000-01-01", "10000-01-01", " 2026-02-03",
                    "2026-02-03 ", "+2026-02-03", "2026-02-03T00:00", "2026/02/03", "2026-02-0a", "２０２６-02-03",
                    "٢٠٢٦-02-03", "2026−02−03", "-001-02-03"] {
            XCTAssertNil(LocalDate(bad), bad)
        }
    }

    func testValidatesComponents() {
        XCTAssertNil(LocalDate(year: 2026, month: 2, day: 29))
        XCTAssertNotNil(LocalDate(year: 2024, month: 2, day: 29))
        XCTAssertNil(LocalDate(year: 0, month: 1, day: 1))
        XCTAssertNil(LocalDate(year: 10_000, month: 1, day: 1))
        XCTAssertNil(LocalDate(year: 2026, month: 6, day: 31))
        XCTAssertEqual(LocalDate(year: 7, month: 3, day: 9)?.description, "0007-03-09")
        XCTAssertEqual((1...12).map { LocalDate.daysIn(month: $0, year: 2026) }, [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
        XCTAssertEqual(LocalDate.daysIn(month: 2, year: 2024), 29)
        XCTAssertFalse(LocalDate.isLeapYear(2100))
        XCTAssertTrue(LocalDate.isLeapYear(2400))
    }

    func testOrderFollowsTheCalendar() {
        let dates = ["2026-12-31", "2027-01-01", "2026-01-31", "2026-02-01", "0999-12-31"].compactMap(LocalDate.init)
        XCTAssertEqual(dates.sorted().map(\.description), ["0999-12-31", "2026-01-31", "2026-02-01", "2026-12-31", "2027-01-01"])
        XCTAssertLessThan(LocalDate("2026-11-30")!, LocalDate("2026-12-01")!)
    }

    func testDaysSinceEpochRoundTripsAndAgreesWithTimestamps() {
        XCTAssertEqual(LocalDate("1970-01-01")?.daysSinceEpoch, 0)
        XCTAssertEqual(LocalDate("1969-12-31")?.daysSinceEpoch, -1)
        XCTAssertEqual(LocalDate("2026-12-04")?.daysSinceEpoch, Int(Timestamp.parse("2026-12-04T00:00:00Z")! / 86_400_000))
        for days in stride(from: LocalDate.min.daysSinceEpoch, through: LocalDate.max.daysSinceEpoch, by: 997) {
            XCTAssertEqual(LocalDate(daysSinceEpoch: days)?.daysSinceEpoch, days)
        }
        XCTAssertNil(LocalDate(daysSinceEpoch: LocalDate.max.daysSinceEpoch + 1))
        XCTAssertNil(LocalDate(daysSinceEpoch: LocalDate.min.daysSinceEpoch - 1))
        // Every day of 2023…2025 follows the one before.
        var d = LocalDate("2023-01-01")!
        while d < LocalDate("2026-01-01")! {
            let next = d.adding(days: 1)!
            XCTAssertEqual(next.daysSinceEpoch, d.daysSinceEpoch + 1)
            XCTAssertTrue(next.day == d.day + 1 || (next.day == 1 && d.day == LocalDate.daysIn(month: d.month, year: d.year)), "\(d) → \(next)")
            d = next
        }
    }

    func testWeekdays() {
        XCTAssertEqual(LocalDate("1970-01-01")?.isoWeekday, 4)
        XCTAssertEqual(LocalDate("2026-12-04")?.isoWeekday, 5)
        XCTAssertEqual(LocalDate("1969-12-28")?.isoWeekday, 7)
        XCTAssertEqual(LocalDate("0001-01-01")?.isoWeekday, 1)
    }

    func testAddingDaysAndMonths() {
        let jan31 = LocalDate("2027-01-31")!
        XCTAssertEqual(jan31.adding(months: 1)?.description, "2027-02-28")
        XCTAssertEqual(jan31.adding(months: 13)?.description, "2028-02-29")
        XCTAssertEqual(jan31.adding(months: 2)?.description, "2027-03-31")
        XCTAssertEqual(jan31.adding(months: -2)?.description, "2026-11-30")
        XCTAssertEqual(jan31.adding(months: -12)?.description, "2026-01-31")
        XCTAssertEqual(jan31.adding(days: 29)?.description, "2027-03-01")
        XCTAssertEqual(jan31.adding(days: -365)?.description, "2026-01-31")
        XCTAssertNil(LocalDate.max.adding(days: 1))
        XCTAssertNil(LocalDate.min.adding(days: -1))
        XCTAssertNil(LocalDate.max.adding(months: 1))
        XCTAssertNil(LocalDate.min.adding(months: -1))
        XCTAssertNil(jan31.adding(days: .max))
        XCTAssertNil(jan31.adding(months: .min))
        XCTAssertEqual(LocalDate("9999-11-30")?.adding(months: 1), LocalDate("9999-12-30"))
    }

    func testCodableAsTheString() throws {
        struct Box: Codable, Equatable { var date: LocalDate; var end: LocalDate? }
        let box = Box(date: LocalDate("2026-12-04")!, end: nil)
        let json = String(decoding: try JSONEncoder().encode(box), as: UTF8.self)
        XCTAssertEqual(json, #"{"date":"2026-12-04"}"#)
        XCTAssertEqual(try JSONDecoder().decode(Box.self, from: Data(json.utf8)), box)
        for bad in [#"{"date":"2026-02-30"}"#, #"{"date":"2026-12-04T00:00:00Z"}"#, #"{"date":20261204}"#] {
            XCTAssertThrowsError(try JSONDecoder().decode(Box.self, from: Data(bad.utf8)), bad)
        }
    }
}
