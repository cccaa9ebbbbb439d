/// A child with a balance; never deleted, only archived.
public struct Child: Sendable, Equatable {
    public var id: String
    public var householdId: String
    public var name: String
    public var sortOrder: Int64
    public var archived: Bool
    public var createdAt: Int64
    public var modifiedAt: Int64
    public var modifiedBy: String
    public var changeTag: String
    public var balanceCents: Int64

    public init(id: String, householdId: String, name: String, sortOrder: Int64, archived: Bool,
                createdAt: Int64, modifiedAt: Int64, modifiedBy: String, changeTag: String, balanceCents: Int64) {
        self.id = id; self.householdId = householdId; self.name = name; self.sortOrder = sortOrder
        self.archived = archived; self.createdAt = createdAt; self.modifiedAt = modifiedAt
        self.modifiedBy = modifiedBy; self.changeTag = changeTag; self.balanceCents = balanceCents
    }

    /// The API JSON form.
    public var json: JSONValue {
        .object([
            "id": .string(id), "householdId": .string(householdId), "name": .string(name),
            "sortOrder": .int(sortOrder), "archived": .bool(archived),
            "createdAt": .string(Timestamp.format(ms: createdAt)),
            "modifiedAt": .string(Timestamp.format(ms: modifiedAt)),
            "modifiedBy": .string(modifiedBy), "changeTag": .string(changeTag),
            "balanceCents": .int(balanceCents),
        ])
    }
}

/// One immutable ledger entry.
public struct LedgerTransaction: Sendable, Equatable {
    public var id: String
    public var householdId: String
    public var childId: String
    public var amountCents: Int64
    public var note: String
    public var source: TransactionSource
    public var createdAt: Int64
    public var recordedAt: Int64
    public var authorAccountId: String
    public var reversesId: String?
    public var reversedById: String?

    public init(id: String, householdId: String, childId: String, amountCents: Int64, note: String,
                source: TransactionSource, createdAt: Int64, recordedAt: Int64, authorAccountId: String,
                reversesId: String?, reversedById: String?) {
        self.id = id; self.householdId = householdId; self.childId = childId; self.amountCents = amountCents
        self.note = note; self.source = source; self.createdAt = createdAt; self.recordedAt = recordedAt
        self.authorAccountId = authorAccountId; self.reversesId = reversesId; self.reversedById = reversedById
    }

    /// The API JSON form.
    public var json: JSONValue {
        .object([
            "id": .string(id), "householdId": .string(householdId), "childId": .string(childId),
            "amountCents": .int(amountCents), "note": .string(note), "source": .string(source.rawValue),
            "createdAt": .string(Timestamp.format(ms: createdAt)),
            "recordedAt": .string(Timestamp.format(ms: recordedAt)),
            "authorAccountId": .string(authorAccountId),
            "reversesId": reversesId.map { .string($0) } ?? .null,
            "reversedById": reversedById.map { .string($0) } ?? .null,
        ])
    }
}
