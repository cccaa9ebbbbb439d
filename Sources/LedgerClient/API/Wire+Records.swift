extension Wire {
    /// A household, with the caller's role and permission.
    public struct Household: Codable, Sendable, Equatable {
        public var id: String
        public var name: String
        public var currency: String?
        public var ownerAccountId: String?
        public var createdAt: String?
        public var modifiedAt: String?
        public var changeTag: String?
        public var role: String?
        public var permission: String?
        public var shared: Bool?
    }

    /// A child as the server stores it.
    public struct Child: Codable, Sendable, Equatable {
        public var id: String
        public var householdId: String?
        public var name: String
        public var sortOrder: Int64?
        public var archived: Bool
        public var createdAt: String
        public var modifiedAt: String
        public var modifiedBy: String
        public var changeTag: String?
        public var balanceCents: Int64?
    }

    /// A transaction as the server stores it.
    public struct Transaction: Codable, Sendable, Equatable {
        public var id: String
        public var householdId: String?
        public var childId: String
        public var amountCents: Int64
        public var note: String?
        public var source: String?
        public var createdAt: String
        public var recordedAt: String?
        public var authorAccountId: String?
        public var reversesId: String?
        public var reversedById: String?
    }
}
