extension ScheduleRecurrence {
    /// The number of due dates due at `instantMs` (milliseconds since the epoch) in `zone`:
    /// those whose first instant (`ScheduleTimeZone.startOfDayMs`) is at or before it. Never
    /// counts a date that starts after `instantMs`; the next date, `date(at:)` of the answer,
    /// starts after it (or does not exist).
    public func dueCount(atMs instantMs: Int64, in zone: ScheduleTimeZone) -> Int {
        var k = count(through: zone.localDate(atMs: instantMs))
        // Where the clocks fell back across a midnight the next date can have begun while
        // they read the day before again; where they skipped a whole day, likewise.
        while let next = date(at: k), zone.startOfDayMs(next) <= instantMs { k += 1 }
        while k > 0, let last = date(at: k - 1), zone.startOfDayMs(last) > instantMs { k -= 1 }
        return k
    }

    /// The due dates due at `instantMs` in `zone` (see `dueCount`), from `lower` on (included),
    /// in order.
    public func dueDates(from lower: LocalDate? = nil, atMs instantMs: Int64, in zone: ScheduleTimeZone) -> [LocalDate] {
        let start = lower.map(index(onOrAfter:)) ?? 0
        let end = dueCount(atMs: instantMs, in: zone)
        guard start < end else { return [] }
        return (start..<end).compactMap(date(at:))
    }
}
