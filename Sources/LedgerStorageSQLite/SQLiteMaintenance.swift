import Foundation
import LedgerCore
import SQLiteKit

/// Work on the database file outside a running server: the admin commands' (`accounts
/// create`, `backup`, `check`), beside a server that may be serving the same file.
package enum SQLiteMaintenance {
    /// Runs `body` in one write transaction on a connection of its own, creating and
    /// migrating the database first when needed.
    package static func write<T>(path: String, cacheBytes: Int, _ body: (any LedgerWriting) throws -> T) throws -> T {
        let db = try SQLiteLedgerStorage.openWriter(path: path, cacheBytes: cacheBytes)
        return try db.transaction { try body(SQLiteLedgerTransaction(db)) }
    }

    /// Writes a consistent copy of the database at `path` to `destination` (nothing is left
    /// there when that fails).
    package static func backup(path: String, to destination: String) throws {
        let db = try SQLiteConnection(path: path, mode: .readOnly)
        do {
            try db.backup(to: destination)
        } catch let e as SQLiteError {
            try? FileManager.default.removeItem(atPath: destination)
            throw StorageFailure("cannot write the backup to \(destination): \(e.message)")
        }
    }

    /// SQLite's integrity and foreign-key checks, every cached balance against its ledger
    /// sum, and the ledger's own invariants (keys, reversals, ids unique per household). An
    /// unreadable database is a report with that problem.
    package static func check(path: String) throws -> StorageCheckReport {
        let db: SQLiteConnection
        do {
            db = try SQLiteConnection(path: path, mode: .readOnly)
            _ = try db.queryOne("SELECT COUNT(*) FROM sqlite_master")
        } catch let e as SQLiteError {
            return StorageCheckReport(problems: ["database: \(path) cannot be read: \(e.message)"], children: 0, transactions: 0)
        }
        let version = Int(try db.queryOne("SELECT COALESCE(MAX(version), 0) FROM schema_version")?.int(0) ?? 0)
        if let mismatch = StorageCheckReport.schemaMismatch(version, known: Schema.migrations.map(\.version).max() ?? 0,
                                                            migrate: "start the server once to migrate it") {
            return mismatch
        }
        try Schema.defineFunctions(db)
        var problems: [String] = []
        for row in try db.query("PRAGMA integrity_check") where row.string(0) != "ok" {
            problems.append("integrity: " + row.string(0))
        }
        for row in try db.query("PRAGMA foreign_key_check") {
            problems.append("foreign key: table \(row.string(0)) row \(row.string(1)) references missing \(row.string(2))")
        }
        // One pass over the ledger: sums per child (checked for Int64 overflow in SQLite, which errors on overflow).
        let mismatches = try db.query("""
            SELECT c.id, c.balance_cents, COALESCE(s.total, 0) FROM children c JOIN households h ON h.id = c.household_id
            LEFT JOIN (SELECT household_key, child_id, SUM(amount_cents) AS total FROM transactions GROUP BY household_key, child_id) s
                ON s.household_key = h.ledger_key AND s.child_id = c.id
            WHERE c.balance_cents != COALESCE(s.total, 0)
            """)
        for m in mismatches {
            problems.append("balance: child \(m.string(0)) caches \(m.int(1)) but its ledger sums to \(m.int(2))")
        }
        // The ledger has no foreign keys (schema version 6): every household needs its key, and
        // every row a household and a child of that household.
        for h in try db.query("SELECT id FROM households WHERE ledger_key IS NULL") {
            problems.append("ledger key: household \(h.string(0)) has none")
        }
        let orphans = try db.query("""
            SELECT t.id, t.household_key, t.child_id, h.id IS NULL FROM transactions t
            LEFT JOIN households h ON h.ledger_key = t.household_key
            LEFT JOIN children c ON c.household_id = h.id AND c.id = t.child_id
            WHERE c.id IS NULL ORDER BY t.n
            """)
        for o in orphans {
            problems.append(o.bool(3)
                ? "ledger: transaction \(o.string(0)) belongs to no household (ledger key \(o.int(1)))"
                : "ledger: transaction \(o.string(0)) names child \(o.string(2)), which its household does not have")
        }
        // Each row's key is the reversal id of its id: lookups by id and reserved reversal ids depend on it.
        let f = Schema.reversalKeyFunction
        for r in try db.query("SELECT id FROM transactions WHERE reversal_id IS NOT COALESCE(\(f)(id), 'not-a-uuid:' || id)") {
            problems.append("key: transaction \(r.string(0)) has the wrong reversal_id")
        }
        let badReversals = try db.query("""
            SELECT r.id FROM transactions r
            LEFT JOIN transactions t ON t.household_key = r.household_key AND t.reversal_id = \(f)(r.reverses_id) AND t.id = r.reverses_id
            WHERE r.reverses_id IS NOT NULL
              AND (t.n IS NULL OR r.amount_cents != -t.amount_cents OR r.child_id != t.child_id OR t.reversed_by_id IS NOT r.id)
            """)
        for r in badReversals { problems.append("reversal: \(r.string(0)) does not mirror its target") }
        // Ids are unique per household. Since version 8 no index of the database keeps them
        // so (the server's writer does, through its id index): a key held twice is a fault.
        for d in try db.query("""
            SELECT MIN(id), COUNT(*) FROM transactions GROUP BY household_key, reversal_id HAVING COUNT(*) > 1
            """) {
            problems.append("key: \(d.int(1)) transactions of one household share the id \(d.string(0))")
        }
        for r in try db.query("""
            SELECT s.household_id, s.id, s.child_id, s.deleted, s.doc, s.due_at, c.id IS NULL FROM schedules s
            LEFT JOIN children c ON c.household_id = s.household_id AND c.id = s.child_id
            """) {
            problems += StorageCheckReport.scheduleProblems(household: r.string(0), id: r.string(1), child: r.string(2),
                                                            deleted: r.bool(3), document: r.string(4),
                                                            dueAt: r.isNull(5) ? nil : r.int(5), childMissing: r.bool(6))
        }
        for r in try db.query("""
            SELECT q.household_id, q.id, q.child_id, q.status, q.doc, c.id IS NULL, q.payment_id FROM requests q
            LEFT JOIN children c ON c.household_id = q.household_id AND c.id = q.child_id
            """) {
            let paymentId = r.string(6)
            let key = NewTransaction.reversalId(of: paymentId).map { Schema.reversalKey($0) } ?? .null
            let paid = try db.queryOne("""
                SELECT t.amount_cents, t.child_id FROM households h JOIN transactions t ON t.household_key = h.ledger_key
                WHERE h.id = ? AND t.reversal_id = ? AND t.id = ?
                """, [.text(r.string(0)), key, .text(paymentId)])
            problems += StorageCheckReport.requestProblems(household: r.string(0), id: r.string(1), child: r.string(2),
                                                           status: r.string(3), document: r.string(4), childMissing: r.bool(5),
                                                           payment: paid.map { ($0.int(0), $0.string(1)) })
        }
        let children = Int(try db.queryOne("SELECT COUNT(*) FROM children")?.int(0) ?? 0)
        let transactions = Int(try db.queryOne("SELECT COUNT(*) FROM transactions")?.int(0) ?? 0)
        return StorageCheckReport(problems: problems, children: children, transactions: transactions)
    }
}
