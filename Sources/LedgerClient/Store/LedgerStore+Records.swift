import SQLiteKit

extension LedgerStore {
    static let childColumns = "id, name, sort_order, archived, created_at, modified_at, modified_by, change_tag"
    static let transactionColumns = "id, child_id, amount_cents, note, source, created_at, recorded_at, author_account_id, reverses_id, pot_id"

    // MARK: Household

    /// The local household.
    func household() throws -> HouseholdRecord {
        guard let r = try db.queryOne("SELECT id, name, currency, owner_account_id, change_tag, role, permission, shared FROM household LIMIT 1") else {
            throw SQLiteError(code: 1, message: "store has no household row")
        }
        return HouseholdRecord(id: r.string(0), name: r.string(1), currency: r.string(2),
                               ownerAccountId: r.optionalString(3), changeTag: r.optionalString(4),
                               role: r.optionalString(5).flatMap(Role.init(rawValue:)),
                               permission: r.optionalString(6).flatMap(Permission.init(rawValue:)), shared: r.bool(7))
    }

    /// Replaces the household row (there is exactly one).
    func saveHousehold(_ h: HouseholdRecord, now: Int64) throws {
        try db.run("DELETE FROM household")
        try db.run("""
            INSERT INTO household (id, name, currency, owner_account_id, change_tag, role, permission, shared, created_at, modified_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(h.id), .text(h.name), .text(h.currency), .optionalText(h.ownerAccountId),
                  .optionalText(h.changeTag), .optionalText(h.role?.rawValue), .optionalText(h.permission?.rawValue),
                  .bool(h.shared), .integer(now), .integer(now)])
    }

    // MARK: Children

    static func child(from r: SQLiteRow) -> ChildRecord {
        ChildRecord(id: r.string(0), name: r.string(1), sortOrder: r.int(2), archived: r.bool(3),
                    createdAt: r.int(4), modifiedAt: r.int(5), modifiedBy: r.string(6), changeTag: r.optionalString(7))
    }

    /// Every child, in sort order then name.
    func children() throws -> [ChildRecord] {
        try db.query("SELECT \(Self.childColumns) FROM children ORDER BY sort_order, name, id").map(Self.child)
    }

    /// The child with `id`, or nil.
    func child(id: String) throws -> ChildRecord? {
        try db.queryOne("SELECT \(Self.childColumns) FROM children WHERE id = ?", [.text(id)]).map(Self.child)
    }

    /// True when the replica holds the child `id`.
    func hasChild(id: String) throws -> Bool {
        try db.queryOne("SELECT 1 FROM children WHERE id = ?", [.text(id)]) != nil
    }

    /// Inserts or replaces a child.
    func upsert(_ c: ChildRecord) throws {
        try db.run("""
            INSERT INTO children (\(Self.childColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET name = excluded.name, sort_order = excluded.sort_order,
              archived = excluded.archived, created_at = excluded.created_at, modified_at = excluded.modified_at,
              modified_by = excluded.modified_by, change_tag = excluded.change_tag
            """, [.text(c.id), .text(c.name), .integer(c.sortOrder), .bool(c.archived), .integer(c.createdAt),
                  .integer(c.modifiedAt), .text(c.modifiedBy), .optionalText(c.changeTag)])
    }

    /// The sort order after every child's (0 for the first child).
    func nextSortOrder() throws -> Int64 {
        (try db.queryOne("SELECT MAX(sort_order) FROM children")?.optionalInt(0)).map { $0 + 1 } ?? 0
    }

    /// Makes `account` the author of every child's current version.
    func attributeEveryChild(to account: String) throws {
        try db.run("UPDATE children SET modified_by = ?", [.text(account)])
    }

    /// Sets only the change tag of a child (its content stays local).
    func setChangeTag(childId: String, _ tag: String?) throws {
        try db.run("UPDATE children SET change_tag = ? WHERE id = ?", [.optionalText(tag), .text(childId)])
    }

    // MARK: Transactions

    static func transaction(from r: SQLiteRow) -> TransactionRecord {
        TransactionRecord(id: r.string(0), childId: r.string(1), amountCents: r.int(2), note: r.string(3),
                          source: r.string(4), createdAt: r.int(5), recordedAt: r.optionalInt(6),
                          authorAccountId: r.optionalString(7), reversesId: r.optionalString(8), potId: r.optionalString(9))
    }

    /// The transaction with `id`, or nil.
    func transaction(id: String) throws -> TransactionRecord? {
        try db.queryOne("SELECT \(Self.transactionColumns) FROM transactions WHERE id = ?", [.text(id)]).map(Self.transaction)
    }

    /// Every transaction, oldest first.
    func allTransactions() throws -> [TransactionRecord] {
        try db.query("SELECT \(Self.transactionColumns) FROM transactions ORDER BY created_at, id").map(Self.transaction)
    }

    /// A child's transactions, newest first, with the id of each one's reversal.
    /// `limit` at most, older than `before` (an entry's `createdAt` and `position`) when given.
    /// Transactions made in the same millisecond come newest-written first.
    func history(childId: String, limit: Int = .max, before: (createdAt: Int64, position: Int64)? = nil) throws -> [HistoryEntry] {
        let cols = Self.transactionColumns.split(separator: ",").map { "t." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
        var params: [SQLiteValue] = [.text(childId)]
        var older = ""
        if let before {
            older = "AND (t.created_at < ? OR (t.created_at = ? AND t.rowid < ?))"
            params += [.integer(before.createdAt), .integer(before.createdAt), .integer(before.position)]
        }
        params.append(.integer(Int64(min(limit, Int(Int64.max)))))
        return try db.query("""
            SELECT \(cols), r.id, p.id IS NOT NULL, t.rowid FROM transactions t
            LEFT JOIN transactions r ON r.reverses_id = t.id
            LEFT JOIN pending p ON p.kind = 'transaction' AND p.id = t.id
            WHERE t.child_id = ? \(older) ORDER BY t.created_at DESC, t.rowid DESC LIMIT ?
            """, params).map { row in
            HistoryEntry(transaction: Self.transaction(from: row), reversedById: row.optionalString(10), isPending: row.bool(11),
                         position: row.int(12))
        }
    }

    /// The reversal of `id`, if one is held.
    func reversal(of id: String) throws -> TransactionRecord? {
        try db.queryOne("SELECT \(Self.transactionColumns) FROM transactions WHERE reverses_id = ?", [.text(id)]).map(Self.transaction)
    }

    /// The id of the child's newest transaction that is neither a reversal nor reversed, if any.
    func newestUndoableTransaction(childId: String) throws -> String? {
        try db.queryOne("""
            SELECT id FROM transactions t WHERE child_id = ? AND reverses_id IS NULL
              AND NOT EXISTS (SELECT 1 FROM transactions r WHERE r.reverses_id = t.id)
            ORDER BY created_at DESC, rowid DESC LIMIT 1
            """, [.text(childId)])?.string(0)
    }

    /// Removes a transaction from the replica (and so from its child's balance).
    func deleteTransaction(id: String) throws {
        try db.run("DELETE FROM transactions WHERE id = ?", [.text(id)])
    }

    /// Inserts or replaces a transaction.
    func upsert(_ t: TransactionRecord) throws {
        try db.run("""
            INSERT INTO transactions (\(Self.transactionColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(id) DO UPDATE SET child_id = excluded.child_id, amount_cents = excluded.amount_cents,
              note = excluded.note, source = excluded.source, created_at = excluded.created_at,
              recorded_at = excluded.recorded_at, author_account_id = excluded.author_account_id,
              reverses_id = excluded.reverses_id, pot_id = excluded.pot_id
            """, [.text(t.id), .text(t.childId), .integer(t.amountCents), .text(t.note), .text(t.source),
                  .integer(t.createdAt), .optionalInteger(t.recordedAt), .optionalText(t.authorAccountId),
                  .optionalText(t.reversesId), .optionalText(t.potId)])
    }

    /// Balance of one child: the sum of its transactions, kept in the child's row by triggers
    /// in the same local transaction as every change to the rows (0 for an unknown child).
    func balance(childId: String) throws -> Int64 {
        try db.queryOne("SELECT balance_cents FROM children WHERE id = ?", [.text(childId)])?.int(0) ?? 0
    }

    static let childSummaryQuery = "SELECT \(childColumns), balance_cents FROM children ORDER BY sort_order, name, id"

    /// Every child with its cached balance and the number of its queued changes (the child's
    /// own edit and its transactions), in sort order then name. Costs one row per child plus
    /// one per queued transaction, whatever the number of transactions held. `queued`: false
    /// when the caller knows nothing is queued (the queue is not read).
    func childSummaries(queued: Bool = true) throws -> [ChildSummaryRow] {
        var pending: [String: Int] = [:]
        for row in try queued ? db.query("""
            SELECT t.child_id, COUNT(*) FROM pending p JOIN transactions t ON t.id = p.id
            WHERE p.kind = 'transaction' GROUP BY t.child_id
            UNION ALL SELECT id, 1 FROM pending WHERE kind = 'child'
            """) : [] {
            pending[row.string(0), default: 0] += Int(row.int(1))
        }
        return try db.query(Self.childSummaryQuery).map {
            let child = Self.child(from: $0)
            return ChildSummaryRow(child: child, balanceCents: $0.int(8), pendingCount: pending[child.id] ?? 0)
        }
    }

    /// Children whose cached balance differs from the sum of their transactions, as
    /// (id, cached, sum); empty unless the cache is broken (tests and `check` use it).
    func balanceMismatches() throws -> [(id: String, cached: Int64, sum: Int64)] {
        try db.query("""
            SELECT c.id, c.balance_cents, COALESCE((SELECT SUM(amount_cents) FROM transactions t WHERE t.child_id = c.id), 0) AS s
            FROM children c WHERE c.balance_cents != s
            """).map { ($0.string(0), $0.int(1), $0.int(2)) }
    }

    /// Record counts of the local ledger.
    func counts() throws -> (children: Int, transactions: Int) {
        let c = try db.queryOne("SELECT COUNT(*) FROM children")?.int(0) ?? 0
        let t = try db.queryOne("SELECT COUNT(*) FROM transactions")?.int(0) ?? 0
        return (Int(c), Int(t))
    }

    /// Removes every child, transaction, schedule, pot, request, queued, deferred and rejected record (join with
    /// `--replace-local`, after an export was written). Records set aside while the join
    /// fetched stay listed.
    func wipeLedger() throws {
        try db.execute("DELETE FROM deferred; DELETE FROM pending; DELETE FROM rejected; DELETE FROM transactions; DELETE FROM children;\n            DELETE FROM schedules; DELETE FROM pots; DELETE FROM transfers; DELETE FROM requests;")
    }
}

/// A child as a snapshot lists it: its balance (cached in the replica) and how many of its
/// changes wait to be pushed.
struct ChildSummaryRow: Sendable, Equatable {
    var child: ChildRecord
    var balanceCents: Int64
    var pendingCount: Int
}

import Foundation
