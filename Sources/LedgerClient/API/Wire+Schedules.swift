extension Wire {
    /// A schedule as the feed and the schedule routes carry it (API.md v1.2), and as a push
    /// sends it (`changeTag`, `nextDueDate` and `householdId` are the server's; a push sends
    /// `baseChangeTag`). Absent optional members are left out when encoded.
    struct Schedule: Codable, Sendable, Equatable {
        var id: String
        var householdId: String?
        var childId: String
        var kind: String
        var amountCents: Int64?
        var rateBasisPoints: Int64?
        var cadence: String
        var firstDate: String
        var timeZone: String
        var endDate: String?
        var note: String?
        var paused: Bool
        var split: [SplitPart]?
        var nextDueDate: String?
        /// True in the feed (and a push) for a schedule that was removed.
        var deleted: Bool?
        /// In a push only: the edit asks for back pay.
        var backPay: Bool? = nil
        var changeTag: String?
        var baseChangeTag: String?
        var createdAt: String
        var modifiedAt: String
        var modifiedBy: String
    }

    /// One pot's share of a schedule's payments.
    struct SplitPart: Codable, Sendable, Equatable {
        var potId: String
        var percent: Int
    }

    /// A pot (API.md v1.2); a push sends `baseChangeTag` and leaves out the server's members.
    struct Pot: Codable, Sendable, Equatable {
        var id: String
        var householdId: String?
        var childId: String
        var name: String
        var targetCents: Int64?
        var targetDate: String?
        var balanceCents: Int64?
        var archived: Bool
        var changeTag: String?
        var baseChangeTag: String?
        var createdAt: String
        var modifiedAt: String
        var modifiedBy: String
    }
}
