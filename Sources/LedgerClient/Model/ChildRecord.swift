/// A child as this device holds it. Times are milliseconds since the epoch.
public struct ChildRecord: Sendable, Equatable, Codable {
    public var id: String
    public var name: String
    public var sortOrder: Int64
    public var archived: Bool
    public var createdAt: Int64
    public var modifiedAt: Int64
    public var modifiedBy: String
    /// The server's change tag of the version this device last saw; nil before its first push.
    public var changeTag: String?

    public init(id: String, name: String, sortOrder: Int64, archived: Bool, createdAt: Int64,
                modifiedAt: Int64, modifiedBy: String, changeTag: String? = nil) {
        self.id = id; self.name = name; self.sortOrder = sortOrder; self.archived = archived
        self.createdAt = createdAt; self.modifiedAt = modifiedAt; self.modifiedBy = modifiedBy
        self.changeTag = changeTag
    }
}

/// A child with its balance, computed from the local transactions.
public struct ChildBalance: Sendable, Equatable {
    public var child: ChildRecord
    /// Sum of the child's transactions, in cents.
    public var balanceCents: Int64
}
