import Foundation
import XCTest
@testable import LedgerModel

final class ScheduleTimeZoneTests: XCTestCase {
    private func zone(_ name: String) throws -> ScheduleTimeZone { try ScheduleTimeZone(identifier: name) }
    private func day(_ text: String) -> LocalDate { LocalDate(text)! }
    private func ms(_ text: String) -> Int64 { Timestamp.parse(text)! }
    private func start(_ date: String, _ zoneName: String) throws -> String {
        Timestamp.format(ms: try zone(zoneName).startOfDayMs(day(date)))
    }

    /// The zone's clocks at `ms`, "YYYY-MM-DD HH:MM:SS", from Foundation's offsets alone: shows
    /// what the tz database of this machine holds.
    private func clock(_ zone: ScheduleTimeZone, _ ms: Int64) -> String {
        let local = ms / 1000 + Int64(zone.timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(ms / 1000))))
        return String(Timestamp.format(ms: local * 1000).prefix(19)).replacingOccurrences(of: "T", with: " ")
    }

    func testAcceptsIANANamesAndRefusesTheRest() throws {
        for name in ["Europe/Zurich", "UTC", "Etc/UTC", "Etc/GMT-5", "America/Argentina/Buenos_Aires", "America/Port-au-Prince",
                     "Australia/Lord_Howe", "America/Havana"] {
            XCTAssertEqual(try zone(name).identifier, name)
        }
        for name in ["", "PST", "EST", "CET", "GMT", "GMT+2", "GMT+02:00", "UTC+1", "Z", "local", "europe/zurich", "Nowhere/City",
                     "Europe//Zurich", "/Europe/Zurich", "Europe/Zurich/", "Europe/Zurich ", " Europe/Zurich", "Europe/Zürich",
                     "Europe/../Zurich", "Europe/zurich"] {
            XCTAssertThrowsError(try zone(name), name) { error in
                XCTAssertEqual(error as? ScheduleError, .unknownTimeZone(name))
            }
        }
        XCTAssertEqual(ScheduleError.unknownTimeZone("Mars/Olympus").description,
                       #"unknown time zone "Mars/Olympus": must be an IANA name such as Europe/Zurich, or UTC"#)
    }

    func testCodableAsTheName() throws {
        let z = try zone("Asia/Beirut")
        XCTAssertEqual(String(decoding: try JSONEncoder().encode([z]), as: UTF8.self), #"["Asia\/Beirut"]"#)
        XCTAssertEqual(try JSONDecoder().decode([ScheduleTimeZone].self, from: Data(#"["Asia/Beirut"]"#.utf8)), [z])
        XCTAssertThrowsError(try JSONDecoder().decode([ScheduleTimeZone].self, from: Data(#"["PST"]"#.utf8)))
        XCTAssertEqual(z, try zone("Asia/Beirut"))
        XCTAssertNotEqual(z, try zone("Asia/Dubai"))
    }

    func testNewYorkSpringForwardAndFallBack() throws {
        // 02:00 → 03:00 on 2026-03-08, 02:00 → 01:00 on 2026-11-01: midnights untouched.
        XCTAssertEqual(try start("2026-03-08", "America/New_York"), "2026-03-08T05:00:00.000Z")
        XCTAssertEqual(try start("2026-03-09", "America/New_York"), "2026-03-09T04:00:00.000Z")
        XCTAssertEqual(try start("2026-11-01", "America/New_York"), "2026-11-01T04:00:00.000Z")
        XCTAssertEqual(try start("2026-11-02", "America/New_York"), "2026-11-02T05:00:00.000Z")
    }

    func testBerlinAndZurich() throws {
        XCTAssertEqual(try start("2026-03-29", "Europe/Berlin"), "2026-03-28T23:00:00.000Z")
        XCTAssertEqual(try start("2026-03-30", "Europe/Berlin"), "2026-03-29T22:00:00.000Z")
        XCTAssertEqual(try start("2026-10-25", "Europe/Berlin"), "2026-10-24T22:00:00.000Z")
        XCTAssertEqual(try start("2026-10-26", "Europe/Berlin"), "2026-10-25T23:00:00.000Z")
        XCTAssertEqual(try start("2026-12-04", "Europe/Zurich"), "2026-12-03T23:00:00.000Z")
    }

    func testLordHoweHalfHourDaylightSaving() throws {
        // +10:30 in winter, +11:00 in summer; the clocks move half an hour at 02:00.
        XCTAssertEqual(try start("2026-04-05", "Australia/Lord_Howe"), "2026-04-04T13:00:00.000Z")
        XCTAssertEqual(try start("2026-04-06", "Australia/Lord_Howe"), "2026-04-05T13:30:00.000Z")
        XCTAssertEqual(try start("2026-10-04", "Australia/Lord_Howe"), "2026-10-03T13:30:00.000Z")
        XCTAssertEqual(try start("2026-10-05", "Australia/Lord_Howe"), "2026-10-04T13:00:00.000Z")
    }

    /// Havana, Santiago and Beirut spring forward at midnight: 00:00 does not exist, and the
    /// day begins when the clocks jump to 01:00.
    func testMidnightGapsBeginTheDayWhenTheClocksJump() throws {
        let cases = [("America/Havana", "2026-03-08", "2026-03-08T05:00:00.000Z", "2026-03-07 23:59:59"),
                     ("America/Santiago", "2026-09-06", "2026-09-06T04:00:00.000Z", "2026-09-05 23:59:59"),
                     ("Asia/Beirut", "2026-03-29", "2026-03-28T22:00:00.000Z", "2026-03-28 23:59:59")]
        for (name, date, expected, before) in cases {
            let z = try zone(name)
            let begins = z.startOfDayMs(day(date))
            XCTAssertEqual(Timestamp.format(ms: begins), expected, name)
            // This machine's tz database has the gap: the second before reads 23:59:59 of the
            // day before, the instant itself 01:00 — 00:00 never shows.
            XCTAssertEqual(clock(z, begins - 1000), before, name)
            XCTAssertEqual(clock(z, begins), date + " 01:00:00", name)
            XCTAssertEqual(z.localDate(atMs: begins), day(date), name)
            XCTAssertEqual(z.localDate(atMs: begins - 1), day(date).adding(days: -1), name)
        }
    }

    /// Havana falls back from 01:00 to 00:00: midnight shows twice and the day begins at the
    /// first. Santiago falls back from 24:00 to 23:00: the day before lasts 25 hours.
    func testMidnightsThatShowTwiceOrLate() throws {
        let havana = try zone("America/Havana")
        XCTAssertEqual(Timestamp.format(ms: havana.startOfDayMs(day("2026-11-01"))), "2026-11-01T04:00:00.000Z")
        XCTAssertEqual(clock(havana, ms("2026-11-01T04:00:00Z")), "2026-11-01 00:00:00")
        XCTAssertEqual(clock(havana, ms("2026-11-01T05:00:00Z")), "2026-11-01 00:00:00")
        XCTAssertEqual(try start("2026-11-02", "America/Havana"), "2026-11-02T05:00:00.000Z")
        XCTAssertEqual(try start("2026-04-04", "America/Santiago"), "2026-04-04T03:00:00.000Z")
        XCTAssertEqual(try start("2026-04-05", "America/Santiago"), "2026-04-05T04:00:00.000Z")
    }

    /// Samoa skipped 2011-12-30: it begins when 2011-12-31 does, and no later date earlier.
    func testASkippedDayBeginsWithTheNext() throws {
        XCTAssertEqual(try start("2011-12-29", "Pacific/Apia"), "2011-12-29T10:00:00.000Z")
        XCTAssertEqual(try start("2011-12-30", "Pacific/Apia"), "2011-12-30T10:00:00.000Z")
        XCTAssertEqual(try start("2011-12-31", "Pacific/Apia"), "2011-12-30T10:00:00.000Z")
        XCTAssertEqual(try start("2012-01-01", "Pacific/Apia"), "2011-12-31T10:00:00.000Z")
    }

    func testLocalDates() throws {
        let z = try zone("Europe/Zurich")
        XCTAssertEqual(z.localDate(atMs: ms("2026-12-03T22:59:59.999Z")), day("2026-12-03"))
        XCTAssertEqual(z.localDate(atMs: ms("2026-12-03T23:00:00Z")), day("2026-12-04"))
        XCTAssertEqual(try zone("UTC").localDate(atMs: -1), day("1969-12-31"))
        XCTAssertEqual(z.localDate(atMs: .max), .max)
        XCTAssertEqual(z.localDate(atMs: .min), .min)
    }

    static let zones = ["America/New_York", "Europe/Berlin", "Europe/Zurich", "Australia/Lord_Howe", "America/Santiago",
                        "America/Havana", "Asia/Beirut", "America/Sao_Paulo", "Pacific/Chatham", "Asia/Kolkata",
                        "America/St_Johns", "Africa/Casablanca", "Asia/Tehran", "Antarctica/Troll", "Pacific/Kiritimati",
                        "Pacific/Apia", "UTC"]

    /// Over random first dates, cadences and zones for three years: each due date begins at
    /// its first instant (the clocks read that date then and the day before an instant
    /// earlier, 00:00 unless a gap skips it), instants strictly increase, and Foundation's
    /// Calendar agrees.
    func testNoDayIsSkippedOrDoubledAcrossDaylightSavingChanges() throws {
        var rng = SplitMix64(seed: 4_545)
        var jumps = 0
        for _ in 0..<240 {
            let z = try zone(Self.zones[Int(rng.next(in: 0...Int64(Self.zones.count - 1)))])
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = z.timeZone
            let first = LocalDate(daysSinceEpoch: Int(rng.next(in: 10_957...24_000)))!  // 2000…2035
            let cadence = ScheduleCadence.allCases[Int(rng.next(in: 0...2))]
            let r = ScheduleRecurrence(firstDate: first, cadence: cadence)
            var previous: (LocalDate, Int64)?
            for k in 0..<(cadence == .monthly ? 36 : 78) {
                let d = try XCTUnwrap(r.date(at: k))
                let begins = z.startOfDayMs(d)
                let what = "\(z) \(first) \(cadence) #\(k) \(d)"
                if z.identifier == "Pacific/Apia" && d == day("2011-12-30") {
                    XCTAssertEqual(z.localDate(atMs: begins), day("2011-12-31"), what)
                } else {
                    XCTAssertEqual(z.localDate(atMs: begins), d, what)
                }
                XCTAssertLessThan(z.localDate(atMs: begins - 1), d, what)
                let reads = clock(z, begins)
                if !reads.hasSuffix(" 00:00:00") {
                    jumps += 1
                    // Only at a change of offset, when the clocks jump past midnight.
                    XCTAssertNotEqual(z.timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(begins / 1000 - 1))),
                                      z.timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(begins / 1000))), what)
                }
                let oracle = calendar.startOfDay(for: Date(timeIntervalSince1970: Double(begins / 1000 + 12 * 3600)))
                XCTAssertEqual(Int64(oracle.timeIntervalSince1970) * 1000, begins, what)
                if let (p, pBegins) = previous {
                    XCTAssertGreaterThan(begins, pBegins, what)
                    switch cadence {
                    case .weekly, .everyTwoWeeks: XCTAssertEqual(d.daysSinceEpoch - p.daysSinceEpoch, cadence.days, what)
                    case .monthly:
                        XCTAssertEqual(d.monthIndex - p.monthIndex, 1, what)
                        XCTAssertEqual(d.day, min(first.day, LocalDate.daysIn(month: d.month, year: d.year)), what)
                    }
                }
                previous = (d, begins)
            }
        }
        XCTAssertGreaterThan(jumps, 0, "no due date fell in a midnight gap")
    }

    /// For random instants, the dates counted due all began at or before the instant and the
    /// next one after it; a walk over the dates counts the same.
    func testNeverADateBeforeItIsDue() throws {
        var rng = SplitMix64(seed: 45_045)
        for _ in 0..<150 {
            let z = try zone(Self.zones[Int(rng.next(in: 0...Int64(Self.zones.count - 1)))])
            let first = LocalDate(daysSinceEpoch: Int(rng.next(in: 10_957...24_000)))!
            let cadence = ScheduleCadence.allCases[Int(rng.next(in: 0...2))]
            let r = ScheduleRecurrence(firstDate: first, cadence: cadence)
            let begins = (0..<140).map { z.startOfDayMs(r.date(at: $0)!) }  // 980 days at least
            for i in 0..<30 {
                // Instants near due instants (within a day, to the millisecond) and anywhere.
                let t = i % 3 == 0 ? begins[Int(rng.next(in: 0...40))] + rng.next(in: -1...1)
                    : i % 3 == 1 ? begins[Int(rng.next(in: 0...40))] + rng.next(in: -86_400_000...86_400_000)
                    : begins[0] + rng.next(in: -30 * 86_400_000...900 * 86_400_000)
                let n = r.dueCount(atMs: t, in: z)
                let what = "\(z) \(first) \(cadence) at \(Timestamp.format(ms: t))"
                XCTAssertEqual(n, begins.prefix(while: { $0 <= t }).count, what)
                for d in r.dueDates(atMs: t, in: z) { XCTAssertLessThanOrEqual(z.startOfDayMs(d), t, what) }
                XCTAssertGreaterThan(begins[n], t, what)
                if n > 0 { XCTAssertLessThanOrEqual(begins[n - 1], t, what) }
            }
        }
    }

    func testDueDatesOfAWeeklyScheduleAroundItsFirstInstant() throws {
        let z = try zone("Europe/Zurich")
        let r = ScheduleRecurrence(firstDate: day("2026-12-04"), cadence: .weekly)
        XCTAssertEqual(r.dueCount(atMs: ms("2026-12-03T22:59:59.999Z"), in: z), 0)
        XCTAssertEqual(r.dueCount(atMs: ms("2026-12-03T23:00:00Z"), in: z), 1)
        XCTAssertEqual(r.dueDates(atMs: ms("2026-12-18T12:00:00Z"), in: z).map(\.description), ["2026-12-04", "2026-12-11", "2026-12-18"])
        XCTAssertEqual(r.dueDates(from: day("2026-12-05"), atMs: ms("2026-12-18T12:00:00Z"), in: z).map(\.description),
                       ["2026-12-11", "2026-12-18"])
        XCTAssertEqual(r.dueCount(atMs: .min, in: z), 0)
    }

    /// Remembered starts of days are the ones the walk computes, across gaps, overlaps and
    /// zones whose dates share an instant, asked twice (computed, then remembered).
    func testRememberedStartsOfDaysAreTheWalksOwn() throws {
        let names = ["Europe/Zurich", "America/Havana", "America/Santiago", "Asia/Beirut", "Pacific/Apia",
                     "Australia/Lord_Howe", "America/New_York", "UTC", "Asia/Kathmandu"]
        for name in names {
            let z = try zone(name)
            var d = day("2011-01-01")
            for _ in 0..<2 {
                for _ in 0..<800 {
                    XCTAssertEqual(z.startOfDaySeconds(d), z.walkToStartOfDaySeconds(d), "\(name) \(d)")
                    d = d.adding(days: 5)!
                }
                d = day("2011-01-01")
            }
        }
    }

    /// The cache keeps at most its capacity, and a value computed once is not computed again.
    func testStartOfDayCacheIsBoundedAndComputesOnce() {
        let cache = StartOfDayCache(capacity: 8)
        var computed = 0
        for day in 0..<20 { _ = cache.value("Europe/Zurich", day) { computed += 1; return Int64(day) } }
        XCTAssertEqual(computed, 20)
        XCTAssertLessThanOrEqual(cache.count, 8)
        XCTAssertEqual(cache.value("Europe/Zurich", 19) { computed += 1; return -1 }, 19)
        XCTAssertEqual(computed, 20)
        XCTAssertEqual(cache.value("Europe/Berlin", 19) { computed += 1; return -2 }, -2)
        XCTAssertEqual(computed, 21)
    }
}
