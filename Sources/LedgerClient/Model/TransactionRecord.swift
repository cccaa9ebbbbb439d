/// One immutable ledger entry. Times are milliseconds since the epoch.
struct TransactionRecord: Sendable, Equatable, Codable {
    var id: String
    var childId: String
    /// Signed cents: positive adds money, negative takes it.
    var amountCents: Int64
    var note: String
    /// One of `manual`, `siri`, `api`, `import`, `allowance`.
    var source: String
    var createdAt: Int64
    /// When the server recorded it; nil until it has been pulled back.
    var recordedAt: Int64?
    var authorAccountId: String?
    /// The transaction this one undoes, if it is a reversal.
    var reversesId: String?
    /// The pot it belongs to; nil for the child's default pot (`ScheduleIDs.defaultPot`).
    var potId: String?

    init(id: String, childId: String, amountCents: Int64, note: String, source: String,
                createdAt: Int64, recordedAt: Int64? = nil, authorAccountId: String? = nil, reversesId: String? = nil,
                potId: String? = nil) {
        self.id = id; self.childId = childId; self.amountCents = amountCents; self.note = note
        self.source = source; self.createdAt = createdAt; self.recordedAt = recordedAt
        self.authorAccountId = authorAccountId; self.reversesId = reversesId; self.potId = potId
    }
}

/// A transaction as history shows it: with the id of its reversal, if any.
struct HistoryEntry: Sendable, Equatable {
    var transaction: TransactionRecord
    var reversedById: String?
    /// True while it waits to be uploaded.
    var isPending = false
    /// Where it was written in this replica (orders transactions of the same millisecond).
    var position: Int64 = 0
}
