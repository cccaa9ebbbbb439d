/// A calendar date without a time or a zone, as the API writes it: `YYYY-MM-DD`
/// (`2026-12-04`), proleptic Gregorian, years 0001…9999. A schedule's `firstDate`,
/// `endDate` and due dates are local dates; only `ScheduleTimeZone` turns one into an instant.
///
/// Ordered by date; encoded (`Codable`) as its `YYYY-MM-DD` string, and decoding refuses
/// anything `init?(_:)` refuses.
public struct LocalDate: Hashable, Comparable, Sendable, CustomStringConvertible, LosslessStringConvertible {
    /// 1…9999.
    public let year: Int
    /// 1…12.
    public let month: Int
    /// 1…the month's length.
    public let day: Int

    /// 0001-01-01.
    public static let min = LocalDate(uncheckedYear: 1, month: 1, day: 1)
    /// 9999-12-31.
    public static let max = LocalDate(uncheckedYear: 9999, month: 12, day: 31)

    /// The date, or nil when it is not one (month 13, February 30, year 0 or 10000).
    public init?(year: Int, month: Int, day: Int) {
        guard (1...9999).contains(year), (1...12).contains(month),
              day >= 1, day <= LocalDate.daysIn(month: month, year: year) else { return nil }
        self.init(uncheckedYear: year, month: month, day: day)
    }

    /// Parses exactly `YYYY-MM-DD`: ten ASCII bytes, four-digit year, two-digit month and
    /// day, a real date. Nil for anything else (`2026-2-3`, `2026-02-30`, ` 2026-02-03`,
    /// `+2026-02-03`, `2026-02-03T00:00`, `0000-01-01`).
    public init?(_ text: String) {
        var text = text
        guard let date = text.withUTF8({ LocalDate.parse(utf8: $0) }) else { return nil }
        self = date
    }

    /// The date `days` days after 1970-01-01 (negative: before it); nil outside 0001-01-01…9999-12-31.
    public init?(daysSinceEpoch days: Int) {
        guard (LocalDate.min.daysSinceEpoch...LocalDate.max.daysSinceEpoch).contains(days) else { return nil }
        let (y, m, d) = Timestamp.civil(fromDays: Int64(days))
        self.init(uncheckedYear: Int(y), month: Int(m), day: Int(d))
    }

    private init(uncheckedYear year: Int, month: Int, day: Int) {
        self.year = year
        self.month = month
        self.day = day
    }

    /// `YYYY-MM-DD`.
    public var description: String {
        func pad(_ v: Int, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: Swift.max(0, width - s.utf8.count)) + s
        }
        return pad(year, 4) + "-" + pad(month, 2) + "-" + pad(day, 2)
    }

    /// Days since 1970-01-01 (negative before it).
    public var daysSinceEpoch: Int {
        Int(Timestamp.daysFromCivil(Int64(year), Int64(month), Int64(day)))
    }

    /// ISO 8601 day of the week: 1 Monday … 7 Sunday.
    public var isoWeekday: Int {
        // 1970-01-01 was a Thursday (4).
        let r = (daysSinceEpoch + 3) % 7
        return (r < 0 ? r + 7 : r) + 1
    }

    /// The date `days` days later (earlier when negative); nil outside 0001-01-01…9999-12-31.
    public func adding(days: Int) -> LocalDate? {
        let (sum, overflow) = daysSinceEpoch.addingReportingOverflow(days)
        return overflow ? nil : LocalDate(daysSinceEpoch: sum)
    }

    /// The date `months` months later (earlier when negative) on the same day of the month,
    /// or on that month's last day when it is shorter: 2027-01-31 + 1 month = 2027-02-28.
    /// Nil outside 0001-01-01…9999-12-31.
    public func adding(months: Int) -> LocalDate? {
        LocalDate.clamped(monthIndex: monthIndex, plus: months, day: day)
    }

    /// Months since 0000-01 (year × 12 + month − 1): consecutive months differ by one.
    var monthIndex: Int { year * 12 + month - 1 }

    /// The date in month `monthIndex + months` on `day`, or on that month's last day when it
    /// is shorter; nil outside the years 1…9999.
    static func clamped(monthIndex: Int, plus months: Int, day: Int) -> LocalDate? {
        let (index, overflow) = monthIndex.addingReportingOverflow(months)
        guard !overflow, index >= 12, index < 10_000 * 12 else { return nil }
        let y = index / 12, m = index % 12 + 1
        return LocalDate(uncheckedYear: y, month: m, day: Swift.min(day, daysIn(month: m, year: y)))
    }

    /// Whether `year` has a February 29 (proleptic Gregorian).
    public static func isLeapYear(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    /// The number of days of `month` (1…12) in `year`: 28…31.
    public static func daysIn(month: Int, year: Int) -> Int {
        Int(Timestamp.daysIn(month: Int64(month), year: Int64(year)))
    }

    public static func < (a: LocalDate, b: LocalDate) -> Bool {
        (a.year, a.month, a.day) < (b.year, b.month, b.day)
    }

    /// Parses `YYYY-MM-DD` from its UTF-8 bytes; nil when malformed or not a date.
    public static func parse(utf8 b: UnsafeBufferPointer<UInt8>) -> LocalDate? {
        guard b.count == 10, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-") else { return nil }
        func number(_ from: Int, _ count: Int) -> Int? {
            var v = 0
            for i in from..<(from + count) {
                guard b[i] >= 48 && b[i] <= 57 else { return nil }
                v = v * 10 + Int(b[i] - 48)
            }
            return v
        }
        guard let y = number(0, 4), let m = number(5, 2), let d = number(8, 2) else { return nil }
        return LocalDate(year: y, month: m, day: d)
    }
}

extension LocalDate: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let date = LocalDate(text) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a date in the form YYYY-MM-DD: \(text)")
        }
        self = date
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
