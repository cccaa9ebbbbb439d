/// What a payer keeps about one schedule to know which periods to pay: its calendar
/// (`terms`), the date its current calendar pays from, and the last date paid or skipped.
/// A pure value: every function takes the instant it runs at, and the server and each
/// device, given the same state and instant, pay the same dates.
///
/// The rules:
/// - **Due.** Date D is due at its first instant in the schedule's zone
///   (`ScheduleTerms.dueInstantMs`), never earlier. A plan at instant T pays every payable
///   date due at T, oldest first, at most `maxPeriods` (366); the rest are *deferred*, paid by
///   the next plan: a plan never drops a date, so payers running at different instants agree.
/// - **Payable.** D is a due date of the current calendar with D ≥ `firstDate`,
///   D ≥ `termsFrom`, D > `lastSettled` and D ≤ `endDate`. Ids are made from D, so a date is
///   paid once per schedule whatever the payers do.
/// - **Amounts.** The core deals in dates only. A plan's dates are paid with the current
///   terms; a change (`edited`) lists the dates to pay with the previous terms and those to
///   pay with the new ones.
/// - **Edits** (`edited(to:atMs:backPay:)`) take effect at their instant E. First every
///   payable date due at E is settled under the previous terms: paid with them, or — if the
///   schedule was paused — held for the resume to decide. The new terms then pay from their
///   first date not yet due at E on the previous zone's clocks (`termsFrom`): dates that only
///   the new terms make due before E (a new first date or cadence, a later end date) are not
///   paid unless the edit asks for back pay, and a new zone alone neither skips a date nor
///   pays one twice (a date not yet due in the old zone but already due in the new one is
///   paid by the next plan).
/// - **Pause.** Pausing is an edit: what is due is paid first. While paused nothing is paid;
///   dates falling due are *held*. Resuming without back pay skips them (`lastSettled` moves
///   to the last one); with back pay they are paid at the resume with the new terms — on the
///   new calendar if the same edit changes it, counting from the last date paid before the pause.
/// - **Back pay** on an edit of a running schedule with a new calendar pays the new calendar's
///   dates due at E after the last date paid (a shift from Fridays to Wednesdays on a Thursday
///   then pays yesterday's Wednesday); on an edit that changes no calendar it pays nothing.
/// - **Past first date.** Creating a schedule (`created`) pays the dates already due once, at
///   most the latest `maxPeriods`; older ones are *dropped* and counted. Any one change pays at
///   most `maxPeriods` dates of each kind, the latest ones; it can drop, a plan cannot.
/// - **Delete** (`deleted`) pays what is due under the terms and nothing after; paid
///   periods stay. A paused schedule's held dates are not paid.
///
/// ## Worked example
///
/// A weekly allowance of 5.00 from Friday 2026-12-04 in Europe/Zurich (UTC+1 in winter),
/// created on 2026-12-01 and paid by a payer that runs every day at 07:00 local time:
///
/// | when (Zurich)        | what happens                                       | pays                |
/// |----------------------|----------------------------------------------------|---------------------|
/// | Tue 2026-12-01 09:00 | created; the first date is ahead: nothing due      | —                   |
/// | Fri 2026-12-04 07:00 | 2026-12-04 was due at 2026-12-03T23:00:00.000Z     | 5.00 for 2026-12-04 |
/// | Fri 2026-12-11 07:00 |                                                    | 5.00 for 2026-12-11 |
/// | Fri 2026-12-18 07:00 |                                                    | 5.00 for 2026-12-18 |
/// | Sun 2026-12-20 18:00 | paused (nothing unpaid to settle)                  | —                   |
/// | Fri 2026-12-25 07:00 | 2026-12-25 held                                    | —                   |
/// | Fri 2027-01-01 07:00 | 2027-01-01 held (2 held)                           | —                   |
/// | Sun 2027-01-03 18:00 | resumed and edited to 6.00, no back pay: 2 skipped | —                   |
/// | Fri 2027-01-08 07:00 |                                                    | 6.00 for 2027-01-08 |
/// | Fri 2027-01-15 07:00 |                                                    | 6.00 for 2027-01-15 |
///
/// 27.00 in all. Had the resume asked for back pay, it would have paid 6.00 each for
/// 2026-12-25 and 2027-01-01 at once (39.00 by 2027-01-15). The payment for 2026-12-04 of
/// schedule `0f5a3c1e-7b2d-4e8f-9a6c-1d2e3f4a5b6c` has id
/// UUIDv5(N, "allowance:0f5a3c1e-7b2d-4e8f-9a6c-1d2e3f4a5b6c:2026-12-04") =
/// `65fa6f96-76c4-578c-9595-c0882e331698`, created at 2026-12-03T23:00:00.000Z.
/// (`ScheduleStateTests.testWorkedExample` replays this.)
public struct ScheduleState: Hashable, Sendable, Codable {
    /// The calendar now in force.
    public var terms: ScheduleTerms
    /// The first date the current terms may pay, "the next unpaid period" of the last edit:
    /// `terms.firstDate` at creation; after an edit of a running schedule, the first date not
    /// yet due at the edit (on the previous zone's clocks); unchanged by an edit that asks for
    /// back pay or leaves the schedule paused, unless that edit changes the calendar (then
    /// the new first date).
    public var termsFrom: LocalDate
    /// The latest due date paid, skipped or dropped; nil before the first.
    public var lastSettled: LocalDate?

    /// The most dates one plan pays, and one change pays of each kind: 366.
    public static let maxPeriods = 366

    /// A state; `termsFrom` defaults to `terms.firstDate`.
    public init(terms: ScheduleTerms, termsFrom: LocalDate? = nil, lastSettled: LocalDate? = nil) {
        self.terms = terms
        self.termsFrom = termsFrom ?? terms.firstDate
        self.lastSettled = lastSettled
    }

    /// The earliest date that may still be paid: on or after `terms.firstDate` and
    /// `termsFrom`, after `lastSettled`. Nil when `lastSettled` is 9999-12-31.
    public var payableFrom: LocalDate? {
        let from = Swift.max(terms.firstDate, termsFrom)
        guard let settled = lastSettled else { return from }
        guard let after = settled.adding(days: 1) else { return nil }
        return Swift.max(from, after)
    }

    /// The next date to pay, due already or not: the earliest payable date (the schedule's
    /// `nextDueDate`). Nil while paused and once the schedule has ended.
    public var nextPayableDate: LocalDate? {
        guard !terms.paused, let from = payableFrom else { return nil }
        let recurrence = terms.recurrence
        let k = recurrence.index(onOrAfter: from)
        return k < terms.countThroughEnd ? recurrence.date(at: k) : nil
    }

    /// What to pay at `instantMs` (milliseconds since the epoch): the payable dates due then,
    /// oldest first, at most `cap` (default `maxPeriods`). Pay them, then store
    /// `settled(by:)`. While paused: nothing, and the count of held dates.
    public func plan(atMs instantMs: Int64, cap: Int = maxPeriods) -> SchedulePlan {
        guard payableFrom != nil else { return SchedulePlan() }
        let due = payable(atMs: instantMs)
        if terms.paused { return SchedulePlan(held: due.count) }
        let count = Swift.min(due.count, Swift.max(0, cap))
        let recurrence = terms.recurrence
        let next = due.lowerBound + count
        return SchedulePlan(pay: (due.lowerBound..<next).compactMap(recurrence.date(at:)),
                            deferred: due.count - count,
                            nextDueDate: next < terms.countThroughEnd ? recurrence.date(at: next) : nil)
    }

    /// The state once `plan`'s dates are paid (`plan` made by this state's `plan(atMs:)`).
    public func settled(by plan: SchedulePlan) -> ScheduleState {
        guard let last = plan.pay.last else { return self }
        var next = self
        next.lastSettled = Swift.max(last, lastSettled ?? last)
        return next
    }

    /// A schedule created at `instantMs` with `terms`. When its first date is in the past,
    /// the dates already due are paid now (`payWithNewTerms`), at most the latest `limit`
    /// (default `maxPeriods`), the older ones dropped. Nothing is paid when created paused.
    public static func created(_ terms: ScheduleTerms, atMs instantMs: Int64, limit: Int = maxPeriods) -> ScheduleChange {
        var state = ScheduleState(terms: terms)
        guard !terms.paused else { return ScheduleChange(state: state) }
        let (dates, dropped) = state.settleLatest(state.payable(atMs: instantMs), limit: limit)
        return ScheduleChange(state: state, payWithNewTerms: dates, dropped: dropped)
    }

    /// The schedule edited to `newTerms` at `instantMs` (the rules above): what is due is
    /// settled under the previous terms, then the new ones apply to what falls due later.
    /// `backPay` asks to pay, with the new terms, the dates a resume would skip (and, when
    /// the calendar changes, the new calendar's dates due since the last one paid); at most
    /// the latest `limit` (default `maxPeriods`) of each list are paid, older ones dropped.
    public func edited(to newTerms: ScheduleTerms, atMs instantMs: Int64, backPay: Bool = false,
                       limit: Int = maxPeriods) -> ScheduleChange {
        var next = self
        var change = ScheduleChange(state: self)
        let due = payable(atMs: instantMs)
        if !terms.paused {
            (change.payWithPreviousTerms, change.dropped) = next.settleLatest(due, limit: limit)
        }
        let newCalendar = newTerms.hasOtherCalendar(than: terms)
        next.terms = newTerms
        if newTerms.paused {
            // Held dates wait for the resume; a new calendar is held from its first date, so
            // back pay then covers the whole pause on it.
            if newCalendar { next.termsFrom = newTerms.firstDate }
        } else if backPay {
            if newCalendar { next.termsFrom = newTerms.firstDate }
            let (dates, dropped) = next.settleLatest(next.payable(atMs: instantMs), limit: limit)
            change.payWithNewTerms = dates
            change.dropped += dropped
        } else {
            if terms.paused, !due.isEmpty {
                change.skipped = due.count
                next.lastSettled = terms.recurrence.date(at: due.upperBound - 1)
            }
            // Whatever else changed (the calendar, a later end date), the new terms pay only
            // what was not yet due at the edit, on the clocks the schedule had then: a new
            // zone alone neither skips a date nor pays one twice.
            let recurrence = newTerms.recurrence
            next.termsFrom = recurrence.date(at: recurrence.dueCount(atMs: instantMs, in: terms.timeZone)) ?? .max
        }
        change.state = next
        return change
    }

    /// The schedule deleted at `instantMs`: the dates due then and not paid yet are paid with
    /// its terms (at most the latest `limit`), nothing later. Paid periods stay paid.
    public func deleted(atMs instantMs: Int64, limit: Int = maxPeriods) -> ScheduleChange {
        var next = self
        guard !terms.paused else { return ScheduleChange(state: self) }
        let (dates, dropped) = next.settleLatest(payable(atMs: instantMs), limit: limit)
        return ScheduleChange(state: next, payWithPreviousTerms: dates, dropped: dropped)
    }

    /// The indexes (in `terms.recurrence`) of the payable dates due at `instantMs`.
    func payable(atMs instantMs: Int64) -> Range<Int> {
        guard let from = payableFrom else { return 0..<0 }
        let recurrence = terms.recurrence
        let start = recurrence.index(onOrAfter: from)
        let end = Swift.min(recurrence.dueCount(atMs: instantMs, in: terms.timeZone), terms.countThroughEnd)
        return start..<Swift.max(start, end)
    }

    /// Settles the dates at `indexes` of the current calendar: returns the latest `limit` of
    /// them to pay and how many older ones are dropped, and moves `lastSettled` to the last.
    private mutating func settleLatest(_ indexes: Range<Int>, limit: Int) -> ([LocalDate], Int) {
        guard !indexes.isEmpty else { return ([], 0) }
        let recurrence = terms.recurrence
        let kept = Swift.min(indexes.count, Swift.max(0, limit))
        lastSettled = recurrence.date(at: indexes.upperBound - 1)
        return ((indexes.upperBound - kept..<indexes.upperBound).compactMap(recurrence.date(at:)), indexes.count - kept)
    }
}
