/// The due dates of a schedule: pure date arithmetic on local dates, no zone and no clock.
///
/// Due date k (k = 0, 1, 2, …) is
/// - weekly: `firstDate` + 7k days; every two weeks: `firstDate` + 14k days;
/// - monthly: k months after `firstDate`, on `firstDate`'s day of the month, or on the
///   month's last day when it is shorter. The day is always taken from `firstDate`, never
///   from the previous due date: 2027-01-31 → 2027-02-28 → 2027-03-31 → 2027-04-30 → 2027-05-31.
///
/// Dates strictly increase with k, so no date is due twice. Dates after 9999-12-31 do not exist.
public struct ScheduleRecurrence: Hashable, Sendable, Codable {
    public var firstDate: LocalDate
    public var cadence: ScheduleCadence

    public init(firstDate: LocalDate, cadence: ScheduleCadence) {
        self.firstDate = firstDate
        self.cadence = cadence
    }

    /// Due date `k`; nil when k is negative or the date would be after 9999-12-31.
    public func date(at k: Int) -> LocalDate? {
        guard k >= 0 else { return nil }
        if let step = cadence.days {
            let (offset, overflow) = k.multipliedReportingOverflow(by: step)
            return overflow ? nil : firstDate.adding(days: offset)
        }
        return LocalDate.clamped(monthIndex: firstDate.monthIndex, plus: k, day: firstDate.day)
    }

    /// The smallest k whose due date is on or after `date` (0 when `date` ≤ `firstDate`).
    /// `date(at:)` may be nil at the answer when no such date exists before year 10000.
    public func index(onOrAfter date: LocalDate) -> Int {
        guard date > firstDate else { return 0 }
        if let step = cadence.days {
            let days = date.daysSinceEpoch - firstDate.daysSinceEpoch
            return (days + step - 1) / step
        }
        // Due date k lies in month firstDate + k, so only the month of `date` needs a look.
        let k = date.monthIndex - firstDate.monthIndex
        guard let candidate = self.date(at: k) else { return k }
        return candidate < date ? k + 1 : k
    }

    /// The number of due dates on or before `date`: the smallest k whose due date is after it.
    public func count(through date: LocalDate) -> Int {
        guard let next = date.adding(days: 1) else {
            // `date` is 9999-12-31: every date that exists is on or before it.
            return index(onOrAfter: date) + (self.date(at: index(onOrAfter: date)) == nil ? 0 : 1)
        }
        return index(onOrAfter: next)
    }

    /// The due dates from `lower` through `upper`, both included, in order; every due date
    /// through `upper` when `lower` is nil. Empty when `upper` < `lower`.
    public func dueDates(from lower: LocalDate? = nil, through upper: LocalDate) -> [LocalDate] {
        let start = lower.map(index(onOrAfter:)) ?? 0
        let end = count(through: upper)
        guard start < end else { return [] }
        return (start..<end).compactMap(date(at:))
    }
}
