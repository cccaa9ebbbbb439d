/// One immutable ledger entry. Times are milliseconds since the epoch.
public struct TransactionRecord: Sendable, Equatable, Codable {
    public var id: String
    public var childId: String
    /// Signed cents: positive adds money, negative takes it.
    public var amountCents: Int64
    public var note: String
    /// One of `manual`, `siri`, `api`, `import`, `allowance`.
    public var source: String
    public var createdAt: Int64
    /// When the server recorded it; nil until it has been pulled back.
    public var recordedAt: Int64?
    public var authorAccountId: String?
    /// The transaction this one undoes, if it is a reversal.
    public var reversesId: String?

    public init(id: String, childId: String, amountCents: Int64, note: String, source: String,
                createdAt: Int64, recordedAt: Int64? = nil, authorAccountId: String? = nil, reversesId: String? = nil) {
        self.id = id; self.childId = childId; self.amountCents = amountCents; self.note = note
        self.source = source; self.createdAt = createdAt; self.recordedAt = recordedAt
        self.authorAccountId = authorAccountId; self.reversesId = reversesId
    }
}

/// A transaction as history shows it: with the id of its reversal, if any.
public struct HistoryEntry: Sendable, Equatable {
    public var transaction: TransactionRecord
    public var reversedById: String?
}
