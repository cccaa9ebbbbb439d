extension Wire {
    /// A household, with the caller's role and permission.
    struct Household: Codable, Sendable, Equatable {
        var id: String
        var name: String
        var currency: String?
        var ownerAccountId: String?
        var createdAt: String?
        var modifiedAt: String?
        var changeTag: String?
        var role: String?
        var permission: String?
        var shared: Bool?
    }

    /// A child as the server stores it.
    struct Child: Codable, Sendable, Equatable {
        var id: String
        var householdId: String?
        var name: String
        var sortOrder: Int64?
        var archived: Bool
        var createdAt: String
        var modifiedAt: String
        var modifiedBy: String
        var changeTag: String?
        var balanceCents: Int64?
    }

    /// A transaction as the server stores it.
    struct Transaction: Codable, Sendable, Equatable {
        var id: String
        var householdId: String?
        var childId: String
        var amountCents: Int64
        var note: String?
        var source: String?
        var createdAt: String
        var recordedAt: String?
        var authorAccountId: String?
        var reversesId: String?
        var reversedById: String?
        /// The pot (API.md v1.2); absent or the default pot's id for the child's default pot.
        var potId: String? = nil
    }
}
