#if Postgres
import LedgerCore
import PostgresKit

/// Work on a PostgreSQL database outside a serving process: the admin commands' (`check`,
/// `migrate`).
package enum PostgresMaintenance {
    /// `check` over PostgreSQL: the schema version, every cached balance against its
    /// ledger sum, each row's reserved reversal id, every reversal against its target, and
    /// each transaction's child (no foreign key since migration 14). (The other foreign keys
    /// and the types are the database's own constraints.) A database that cannot
    /// be read is a report with that problem.
    package static func check(url: String) -> StorageCheckReport {
        do {
            let db = try PGConnection(url: url, application: PostgresLedgerStorage.application)
            try db.execute("SET statement_timeout = 0")
            return try db.transaction(.repeatableRead, readOnly: true) { try check(db) }
        } catch let e as PGError {
            return StorageCheckReport(problems: ["database: \(e.message)"], children: 0, transactions: 0)
        } catch {
            return StorageCheckReport(problems: ["database: \(error)"], children: 0, transactions: 0)
        }
    }

    static func check(_ db: PGConnection) throws -> StorageCheckReport {
        if let mismatch = StorageCheckReport.schemaMismatch(try PGMigrator.version(db),
                                                            known: PostgresSchema.migrations.map(\.version).max() ?? 0,
                                                            migrate: "run `kidledger-server migrate` or start a server") {
            return mismatch
        }
        var problems: [String] = []
        // Every statement reads the whole database: named as the global statement `check`
        // (scripts/household_scope.py, docs/scaling.md).
        let global = "/* global: check */ "
        // Sums in numeric: a corrupt ledger may overflow bigint.
        for m in try db.query("""
            \(global)SELECT c.id::text, c.balance_cents, COALESCE(s.total, 0)::text FROM children c
            LEFT JOIN (SELECT household_id, child_id, SUM(amount_cents) AS total FROM transactions GROUP BY household_id, child_id) s
                ON s.household_id = c.household_id AND s.child_id = c.id
            WHERE c.balance_cents::numeric IS DISTINCT FROM COALESCE(s.total, 0)
            """).rows {
            problems.append("balance: child \(m.string(0)) caches \(m.int(1)) but its ledger sums to \(m.string(2))")
        }
        for r in try db.query(global + "SELECT id::text, reversal_id::text, reverses_id IS NOT NULL FROM transactions").rows {
            let expected = r.bool(2) ? nil : NewTransaction.reversalId(of: r.string(0))
            let stored: String? = r.isNull(1) ? nil : r.string(1)
            if stored != expected { problems.append("key: transaction \(r.string(0)) has the wrong reversal_id") }
        }
        for r in try db.query("""
            \(global)SELECT r.id::text FROM transactions r
            LEFT JOIN transactions t ON t.household_id = r.household_id AND t.id = r.reverses_id
            WHERE r.reverses_id IS NOT NULL
              AND (t.id IS NULL OR r.amount_cents <> -t.amount_cents OR r.child_id <> t.child_id
                   OR t.reversed_by_id IS DISTINCT FROM r.id)
            """).rows {
            problems.append("reversal: \(r.string(0)) does not mirror its target")
        }
        for r in try db.query("""
            \(global)SELECT t.id::text FROM transactions t
            LEFT JOIN transactions r ON r.household_id = t.household_id AND r.id = t.reversed_by_id
            WHERE t.reversed_by_id IS NOT NULL AND r.reverses_id IS DISTINCT FROM t.id
            """).rows {
            problems.append("reversal: \(r.string(0)) names a reversal that does not reverse it")
        }
        for r in try db.query("""
            \(global)SELECT s.household_id, s.id, s.child_id, s.deleted, s.doc, s.due_at, c.id IS NULL FROM schedules s
            LEFT JOIN children c ON c.household_id = s.household_id AND c.id = s.child_id
            """).rows {
            problems += StorageCheckReport.scheduleProblems(household: r.uuid(0), id: r.uuid(1), child: r.uuid(2),
                                                            deleted: r.bool(3), document: r.string(4),
                                                            dueAt: r.optionalTimestampMs(5), childMissing: r.bool(6))
        }
        // Pots (as over SQLite): every transaction in its child's default pot or a pot of that
        // child, so the pot balances add up to the child's; deleted pots empty; pots of known children.
        for r in try db.query("""
            \(global)SELECT t.id::text, t.pot_id::text, t.child_id::text FROM transactions t
            LEFT JOIN pots p ON p.household_id = t.household_id AND p.id = t.pot_id AND p.child_id = t.child_id
            WHERE t.pot_id IS NOT NULL AND p.id IS NULL
            """).rows {
            problems.append("pot: transaction \(r.string(0)) names pot \(r.string(1)), which is not a pot of its child \(r.string(2))")
        }
        for r in try db.query("""
            \(global)SELECT p.id::text, SUM(t.amount_cents)::text FROM pots p
            JOIN transactions t ON t.household_id = p.household_id AND t.child_id = p.child_id AND t.pot_id = p.id
            WHERE p.deleted GROUP BY p.household_id, p.id HAVING SUM(t.amount_cents) <> 0
            """).rows {
            problems.append("pot: \(r.string(0)) is deleted but holds \(r.string(1))")
        }
        for r in try db.query("""
            \(global)SELECT p.id::text, p.child_id::text FROM pots p
            LEFT JOIN children c ON c.household_id = p.household_id AND c.id = p.child_id WHERE c.id IS NULL
            """).rows {
            problems.append("pot: \(r.string(0)) names child \(r.string(1)), which its household does not have")
        }
        // No foreign key keeps a transaction's child since migration 14 (the rules do).
        for r in try db.query("""
            \(global)SELECT t.id::text, t.child_id::text FROM transactions t
            LEFT JOIN children c ON c.household_id = t.household_id AND c.id = t.child_id WHERE c.id IS NULL
            """).rows {
            problems.append("child: transaction \(r.string(0)) names child \(r.string(1)), which its household does not have")
        }
        for r in try db.query("""
            \(global)SELECT q.household_id, q.id, q.child_id, q.status, q.doc, c.id IS NULL, t.amount_cents, t.child_id
            FROM requests q
            LEFT JOIN children c ON c.household_id = q.household_id AND c.id = q.child_id
            LEFT JOIN transactions t ON t.household_id = q.household_id AND t.id = q.payment_id
            """).rows {
            problems += StorageCheckReport.requestProblems(household: r.uuid(0), id: r.uuid(1), child: r.uuid(2),
                                                           status: r.string(3), document: r.string(4), childMissing: r.bool(5),
                                                           payment: r.isNull(6) ? nil : (r.int(6), r.uuid(7)))
        }
        let children = Int(try db.queryOne(global + "SELECT count(*) FROM children")?.int(0) ?? 0)
        let transactions = Int(try db.queryOne(global + "SELECT count(*) FROM transactions")?.int(0) ?? 0)
        return StorageCheckReport(problems: problems, children: children, transactions: transactions)
    }

    /// Applies the schema's migrations once (safe while other processes start or run):
    /// those applied, and the version the database is at now.
    package static func migrate(url: String) throws -> (applied: [Int], version: Int) {
        do {
            let db = try PGConnection(url: url, application: PostgresLedgerStorage.application)
            return (try PostgresSchema.migrate(db), try PGMigrator.version(db))
        } catch let e as PGError {
            throw StorageFailure("PostgreSQL: \(e.message)")
        }
    }

    /// `rewound` over PostgreSQL, after a pg_restore, a point-in-time recovery or a failover
    /// to an asynchronous standby: migrates when needed, then gives the database a new
    /// incarnation and answers it. Serving processes see it on their next feed read.
    package static func rewound(url: String) throws -> Int64 {
        do {
            let db = try PGConnection(url: url, application: PostgresLedgerStorage.application)
            _ = try PostgresSchema.migrate(db)
            let incarnation = Int64.random(in: 1...Int64.max)
            _ = try db.query("UPDATE database_incarnation SET incarnation = $1, since = now(), reason = 'rewound' WHERE id = 1",
                       [.int(incarnation)])
            return incarnation
        } catch let e as PGError {
            throw StorageFailure("PostgreSQL: \(e.message)")
        }
    }
}
#endif
