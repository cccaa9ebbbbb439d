/// What a schedule pays, with the API's names as raw values. The raw value is also the
/// payment's `source` and the first part of its id's name (`ScheduleIDs.payment`).
public enum ScheduleKind: String, Sendable, Hashable, Codable, CaseIterable {
    /// A fixed `amountCents` every period.
    case allowance
    /// `rateBasisPoints` of the child's positive balance at the due instant, rounded down to
    /// a cent (`Cents.interest`).
    case interest
}
