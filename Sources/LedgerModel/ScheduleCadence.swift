/// How often a schedule pays, with the API's names as raw values.
public enum ScheduleCadence: String, Sendable, Hashable, Codable, CaseIterable {
    /// Every 7 days from the first date.
    case weekly
    /// Every 14 days from the first date.
    case everyTwoWeeks
    /// Once a month on the first date's day of the month, or on the month's last day when
    /// it is shorter (a first date of January 31 pays on February 28 or 29, then March 31).
    case monthly

    /// Days between due dates, for the cadences that count days; nil for `monthly`.
    public var days: Int? {
        switch self {
        case .weekly: 7
        case .everyTwoWeeks: 14
        case .monthly: nil
        }
    }
}
