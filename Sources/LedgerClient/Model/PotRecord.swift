import LedgerModel

/// A pot of a child (Spend, Save, Give…) with its optional goal, as this device holds it.
/// Times are milliseconds since the epoch.
struct PotRecord: Sendable, Equatable {
    var id: String
    var childId: String
    var name: String
    /// The goal's amount, if any.
    var targetCents: Int64?
    /// The goal's date, if any.
    var targetDate: LocalDate?
    var archived: Bool
    var createdAt: Int64
    var modifiedAt: Int64
    var modifiedBy: String
    var changeTag: String?
}
