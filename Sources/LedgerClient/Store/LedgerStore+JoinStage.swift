import SQLiteKit

/// The staging tables of a join's first fetch (`join_children`, `join_transactions`): pages are
/// appended there, then moved into the replica in one transaction.
extension LedgerStore {
    private static let stageChildSQL =
        "INSERT OR REPLACE INTO join_children (\(childColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    private static let stageTransactionSQL =
        "INSERT INTO join_transactions (\(transactionColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

    /// Stages a child of the fetch (a later version replaces an earlier one).
    func stageChild(_ c: ChildRecord) throws {
        try db.run(Self.stageChildSQL,
                   [.text(c.id), .text(c.name), .integer(c.sortOrder), .bool(c.archived), .integer(c.createdAt),
                    .integer(c.modifiedAt), .text(c.modifiedBy), .optionalText(c.changeTag)])
    }

    /// Appends transactions of the fetch to the stage, in feed order.
    func stageTransactions(_ transactions: [TransactionRecord]) throws {
        let insert = try db.prepare(Self.stageTransactionSQL)
        for t in transactions {
            try insert.bind([.text(t.id), .text(t.childId), .integer(t.amountCents), .text(t.note), .text(t.source),
                             .integer(t.createdAt), .optionalInteger(t.recordedAt), .optionalText(t.authorAccountId),
                             .optionalText(t.reversesId), .optionalText(t.potId)])
            try insert.finish()
        }
    }

    /// Stages a pot or schedule of the fetch as its feed JSON (a later version replaces an earlier one).
    func stageRecord(kind: String, id: String, json: String) throws {
        try db.run("INSERT OR REPLACE INTO join_records (kind, id, json) VALUES (?, ?, ?)", [.text(kind), .text(id), .text(json)])
    }

    /// The staged pots and schedules as (kind, json), pots first.
    func stagedRecords() throws -> [(kind: String, json: String)] {
        try db.query("SELECT kind, json FROM join_records ORDER BY kind = 'schedule', rowid").map { ($0.string(0), $0.string(1)) }
    }

    /// The staged children, in the order they were first staged.
    func stagedChildren() throws -> [ChildRecord] {
        try db.query("SELECT \(Self.childColumns) FROM join_children ORDER BY rowid").map(Self.child)
    }

    /// At most `limit` staged transactions after stage position `after` (0: from the start), in
    /// the order staged, each with its position.
    func stagedTransactions(after: Int64, limit: Int) throws -> [(position: Int64, transaction: TransactionRecord)] {
        try db.query("""
            SELECT \(Self.transactionColumns), rowid FROM join_transactions WHERE rowid > ? ORDER BY rowid LIMIT ?
            """, [.integer(after), .int(limit)]).map { ($0.int(10), Self.transaction(from: $0)) }
    }

    /// What `copyStageIntoEmptyReplica` did.
    struct StageCopy {
        /// Records staged.
        var children = 0
        var transactions = 0
        /// Staged transactions whose child the stage does not hold; not copied.
        var orphans: [TransactionRecord] = []
    }

    /// Copies the staged records into an empty replica with a few statements (transactions
    /// whose child is not staged are returned instead) and notes the newest child version seen.
    /// Call inside a store transaction.
    func copyStageIntoEmptyReplica() throws -> StageCopy {
        let children = Self.childColumns, transactions = Self.transactionColumns
        try db.execute("INSERT INTO children (\(children)) SELECT \(children) FROM join_children")
        // Into an empty table; the child index is built once afterwards by sorting instead of
        // row by row. A transaction named twice by the feed (it never changes) is taken once.
        try db.execute("""
            DROP INDEX transactions_child;
            INSERT OR IGNORE INTO transactions (\(transactions)) SELECT \(transactions) FROM join_transactions
            WHERE child_id IN (SELECT id FROM children);
            \(Self.transactionsChildIndex);
            """)
        var copy = StageCopy()
        copy.orphans = try db.query("""
            SELECT \(transactions) FROM join_transactions WHERE child_id NOT IN (SELECT id FROM children)
            """).map(Self.transaction)
        if let newest = try db.queryOne("SELECT MAX(modified_at) FROM join_children")?.optionalInt(0) {
            try noteSeen(modifiedAt: newest)
        }
        copy.children = Int(try db.queryOne("SELECT COUNT(*) FROM join_children")?.int(0) ?? 0)
        copy.transactions = Int(try db.queryOne("SELECT COUNT(*) FROM join_transactions")?.int(0) ?? 0)
        return copy
    }

    /// Empties the staging tables.
    func clearStagedRecords() throws {
        try db.execute("DELETE FROM join_children; DELETE FROM join_transactions; DELETE FROM join_records;")
    }
}
