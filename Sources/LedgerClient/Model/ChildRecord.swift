/// A child as this device holds it. Times are milliseconds since the epoch.
struct ChildRecord: Sendable, Equatable, Codable {
    var id: String
    var name: String
    var sortOrder: Int64
    var archived: Bool
    var createdAt: Int64
    var modifiedAt: Int64
    var modifiedBy: String
    /// The server's change tag of the version this device last saw; nil before its first push.
    var changeTag: String?

    init(id: String, name: String, sortOrder: Int64, archived: Bool, createdAt: Int64,
                modifiedAt: Int64, modifiedBy: String, changeTag: String? = nil) {
        self.id = id; self.name = name; self.sortOrder = sortOrder; self.archived = archived
        self.createdAt = createdAt; self.modifiedAt = modifiedAt; self.modifiedBy = modifiedBy
        self.changeTag = changeTag
    }
}

/// A child with its balance, computed from the local transactions.
struct ChildBalance: Sendable, Equatable {
    var child: ChildRecord
    /// Sum of the child's transactions, in cents.
    var balanceCents: Int64
}
