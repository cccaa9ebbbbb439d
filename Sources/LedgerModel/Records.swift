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
    /// The pot it belongs to; nil for the child's default pot (`ScheduleIDs.defaultPot`),
    /// which is how it is stored. The JSON form always names the pot.
    public var potId: String?

    public init(id: String, householdId: String, childId: String, amountCents: Int64, note: String,
                source: TransactionSource, createdAt: Int64, recordedAt: Int64, authorAccountId: String,
                reversesId: String?, reversedById: String?, potId: String? = nil) {
        self.id = id; self.householdId = householdId; self.childId = childId; self.amountCents = amountCents
        self.note = note; self.source = source; self.createdAt = createdAt; self.recordedAt = recordedAt
        self.authorAccountId = authorAccountId; self.reversesId = reversesId; self.reversedById = reversedById
        self.potId = potId
    }

    /// The pot's id as the API names it: `potId`, or the child's default pot.
    public var resolvedPotId: String { resolvedPotId(sha1: .portable) }

    /// `resolvedPotId`, hashing with `sha1` (the server passes its faster one).
    public func resolvedPotId(sha1: SHA1.Function) -> String {
        if let potId { return potId }
        return LedgerIDs.parse(childId).map { ScheduleIDs.defaultPot(childId: $0, sha1: sha1).lowercased } ?? childId
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
            "potId": .string(resolvedPotId),
        ])
    }

    /// The most bytes `writeJSON` writes: the keys, the 24-byte timestamps and each string
    /// as `ByteWriter.jsonStringBound` gives it (exact when it needs no escape, as ids
    /// never do). Bounded from the lengths alone, escaping every byte at worst, an answer's
    /// buffer was three times its size, over the allocator's per-thread cache limit.
    public var jsonBound: Int {
        256 + 48 + ByteWriter.jsonStringBound(id) + ByteWriter.jsonStringBound(householdId)
            + ByteWriter.jsonStringBound(childId) + ByteWriter.jsonStringBound(note)
            + ByteWriter.jsonStringBound(source.rawValue) + ByteWriter.jsonStringBound(authorAccountId)
            + (reversesId.map(ByteWriter.jsonStringBound) ?? 0) + (reversedById.map(ByteWriter.jsonStringBound) ?? 0)
    }

    /// `json.serialized()`, written straight into `w` without building the object (an
    /// answer to every write of a transaction): the same bytes.
    public func writeJSON(_ w: inout ByteWriter, sha1: SHA1.Function = .portable) {
        writeJSON(&w, resolvedPotId: resolvedPotId(sha1: sha1))
    }

    /// `writeJSON(_:sha1:)` with the pot's id as the API names it (`resolvedPotId`) already
    /// known (a server remembers each child's default pot).
    public func writeJSON(_ w: inout ByteWriter, resolvedPotId: String) {
        w.put(literal: "{\"id\":")
        w.putJSONString(id)
        w.put(literal: ",\"householdId\":")
        w.putJSONString(householdId)
        w.put(literal: ",\"childId\":")
        w.putJSONString(childId)
        w.put(literal: ",\"amountCents\":")
        w.putDecimal(amountCents)
        w.put(literal: ",\"note\":")
        w.putJSONString(note)
        w.put(literal: ",\"source\":")
        w.putJSONString(source.rawValue)
        w.put(literal: ",\"createdAt\":\"")
        w.putTimestamp(ms: createdAt)
        w.put(literal: "\",\"recordedAt\":\"")
        w.putTimestamp(ms: recordedAt)
        w.put(literal: "\",\"authorAccountId\":")
        w.putJSONString(authorAccountId)
        w.put(literal: ",\"reversesId\":")
        if let reversesId { w.putJSONString(reversesId) } else { w.put(literal: "null") }
        w.put(literal: ",\"reversedById\":")
        if let reversedById { w.putJSONString(reversedById) } else { w.put(literal: "null") }
        w.put(literal: ",\"potId\":")
        w.putJSONString(resolvedPotId)
        w.put(125)
    }
}
