import XCTest
@testable import LedgerModel

final class ScheduleRecurrenceTests: XCTestCase {
    private func dates(_ first: String, _ cadence: ScheduleCadence, _ count: Int) -> [String] {
        let r = ScheduleRecurrence(firstDate: LocalDate(first)!, cadence: cadence)
        return (0..<count).map { r.date(at: $0)?.description ?? "nil" }
    }

    func testMonthlyOnThe31stThroughALeapAndANonLeapFebruary() {
        XCTAssertEqual(dates("2027-01-31", .monthly, 15), [
            "2027-01-31", "2027-02-28", "2027-03-31", "2027-04-30", "2027-05-31", "2027-06-30", "2027-07-31",
            "2027-08-31", "2027-09-30", "2027-10-31", "2027-11-30", "2027-12-31", "2028-01-31", "2028-02-29", "2028-03-31",
        ])
    }

    func testMonthlyOnThe29thAnd30th() {
        XCTAssertEqual(dates("2027-01-29", .monthly, 4), ["2027-01-29", "2027-02-28", "2027-03-29", "2027-04-29"])
        XCTAssertEqual(dates("2028-01-29", .monthly, 3), ["2028-01-29", "2028-02-29", "2028-03-29"])
        XCTAssertEqual(dates("2027-01-30", .monthly, 4), ["2027-01-30", "2027-02-28", "2027-03-30", "2027-04-30"])
        XCTAssertEqual(dates("2028-02-29", .monthly, 3), ["2028-02-29", "2028-03-29", "2028-04-29"])
        XCTAssertEqual(dates("2026-12-15", .monthly, 3), ["2026-12-15", "2027-01-15", "2027-02-15"])
        // Century years: 2100 is not a leap year, 2000 was.
        XCTAssertEqual(dates("2100-01-31", .monthly, 2), ["2100-01-31", "2100-02-28"])
        XCTAssertEqual(dates("2000-01-31", .monthly, 2), ["2000-01-31", "2000-02-29"])
    }

    func testWeeklyAndEveryTwoWeeksCountDays() {
        XCTAssertEqual(dates("2026-12-25", .weekly, 3), ["2026-12-25", "2027-01-01", "2027-01-08"])
        XCTAssertEqual(dates("2028-02-22", .everyTwoWeeks, 3), ["2028-02-22", "2028-03-07", "2028-03-21"])
        XCTAssertEqual(ScheduleCadence.allCases.map(\.rawValue), ["weekly", "everyTwoWeeks", "monthly"])
    }

    func testEndsAtTheLastDate() {
        let r = ScheduleRecurrence(firstDate: LocalDate("9999-12-01")!, cadence: .weekly)
        XCTAssertEqual(r.date(at: 4)?.description, "9999-12-29")
        XCTAssertNil(r.date(at: 5))
        XCTAssertNil(r.date(at: -1))
        XCTAssertNil(r.date(at: .max))
        XCTAssertEqual(r.count(through: .max), 5)
        let m = ScheduleRecurrence(firstDate: LocalDate("9999-10-31")!, cadence: .monthly)
        XCTAssertEqual(m.count(through: .max), 3)
        XCTAssertNil(m.date(at: 3))
        XCTAssertEqual(ScheduleRecurrence(firstDate: .max, cadence: .monthly).count(through: .max), 1)
    }

    /// index(onOrAfter:), count(through:) and dueDates(from:through:) agree with a walk over
    /// the dates, around every first date's month ends.
    func testIndexesAgreeWithAWalk() {
        var rng = SplitMix64(seed: 45)
        for _ in 0..<300 {
            let first = LocalDate(daysSinceEpoch: Int(rng.next(in: 19_000...21_000)))!
            let cadence = ScheduleCadence.allCases[Int(rng.next(in: 0...2))]
            let r = ScheduleRecurrence(firstDate: first, cadence: cadence)
            let walk = (0..<200).compactMap(r.date(at:))  // beyond the latest `d` below
            XCTAssertEqual(walk, walk.sorted())
            XCTAssertEqual(Set(walk).count, walk.count)
            for _ in 0..<20 {
                let d = first.adding(days: Int(rng.next(in: -40...1_000)))!
                XCTAssertEqual(r.index(onOrAfter: d), walk.firstIndex { $0 >= d }, "\(first) \(cadence) \(d)")
                XCTAssertEqual(r.count(through: d), walk.filter { $0 <= d }.count, "\(first) \(cadence) \(d)")
                let lower = first.adding(days: Int(rng.next(in: -40...600)))!
                XCTAssertEqual(r.dueDates(from: lower, through: d), walk.filter { $0 >= lower && $0 <= d })
            }
            XCTAssertEqual(r.dueDates(through: walk[9]), Array(walk[0...9]))
        }
    }
}

/// A small seeded generator, so property tests replay exactly.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func next(in range: ClosedRange<Int64>) -> Int64 { Int64.random(in: range, using: &self) }
}
