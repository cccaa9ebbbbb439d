/// The outcome of creating, editing or deleting a schedule at an instant
/// (`ScheduleState.created`, `edited`, `deleted`): the state to store, and the payments to
/// write with the change, in the same transaction.
public struct ScheduleChange: Hashable, Sendable {
    /// The schedule's state after the change.
    public var state: ScheduleState
    /// Due dates that fell due under the previous terms and were not paid yet: pay them now
    /// with the previous terms (amount, split). Oldest first.
    public var payWithPreviousTerms: [LocalDate]
    /// Due dates before the change paid now with the new terms: the missed periods of a
    /// schedule created with a first date in the past, or the back pay an edit asked for.
    /// Oldest first.
    public var payWithNewTerms: [LocalDate]
    /// Due dates held while paused that the change skips (a resume without back pay).
    public var skipped: Int
    /// Due dates beyond the limit on one change's payments (`ScheduleState.maxPeriods`, the
    /// oldest ones): never paid. Nonzero only after a long time unpaid; say it in the answer.
    public var dropped: Int

    public init(state: ScheduleState, payWithPreviousTerms: [LocalDate] = [], payWithNewTerms: [LocalDate] = [],
                skipped: Int = 0, dropped: Int = 0) {
        self.state = state
        self.payWithPreviousTerms = payWithPreviousTerms
        self.payWithNewTerms = payWithNewTerms
        self.skipped = skipped
        self.dropped = dropped
    }
}
