/// The fields of a schedule that decide when it pays (its amounts do not: they are the
/// caller's, see `ScheduleState`).
public struct ScheduleTerms: Hashable, Sendable, Codable {
    /// Due date 0.
    public var firstDate: LocalDate
    public var cadence: ScheduleCadence
    /// The zone whose midnights the due dates begin at.
    public var timeZone: ScheduleTimeZone
    /// The last date that may be paid, included; nil for none. A date before `firstDate` means
    /// the schedule never pays.
    public var endDate: LocalDate?
    /// While paused nothing is paid; periods falling due are held, then skipped on resume
    /// unless the resuming edit asks for back pay.
    public var paused: Bool

    public init(firstDate: LocalDate, cadence: ScheduleCadence, timeZone: ScheduleTimeZone,
                endDate: LocalDate? = nil, paused: Bool = false) {
        self.firstDate = firstDate
        self.cadence = cadence
        self.timeZone = timeZone
        self.endDate = endDate
        self.paused = paused
    }

    /// The due dates of `firstDate` and `cadence`.
    public var recurrence: ScheduleRecurrence { ScheduleRecurrence(firstDate: firstDate, cadence: cadence) }

    /// When `date` is due: its first instant in `timeZone`, in milliseconds since the epoch
    /// (00:00 of `date`, or the end of a gap that skips it). Also the payment's `createdAt`.
    public func dueInstantMs(_ date: LocalDate) -> Int64 { timeZone.startOfDayMs(date) }

    /// Whether `other` pays on other dates or at other instants: another first date,
    /// cadence or zone (not another end date or pause state).
    func hasOtherCalendar(than other: ScheduleTerms) -> Bool {
        firstDate != other.firstDate || cadence != other.cadence || timeZone != other.timeZone
    }

    /// The number of due dates on or before `endDate` (Int.max without one).
    var countThroughEnd: Int { endDate.map { recurrence.count(through: $0) } ?? .max }
}
