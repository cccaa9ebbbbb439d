import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStorageSQLite
import SQLiteKit
import XCTest

/// Version 3 rebuilds the transactions table: a database written by an earlier version
/// keeps every row and row number, and reversals stay one per transaction.
final class SchemaMigrationTests: XCTestCase {
    func testVersion3KeepsEveryRowAndStillRefusesASecondReversal() throws {
        try withTemporaryDatabase("schema") { path in
            let db = try SQLiteConnection(path: path)
            XCTAssertEqual(try Migrator.migrate(db, Schema.migrations.filter { $0.version <= 2 }), [1, 2])
            try db.execute("""
                INSERT INTO accounts VALUES ('a1', 'ann', 'Ann', 1);
                INSERT INTO households (id, name, currency, owner_account_id, created_at, modified_at, change_tag, incarnation, seq)
                    VALUES ('h1', 'Home', 'EUR', 'a1', 1, 1, 'v1', 1, 3);
                INSERT INTO children (id, household_id, name, sort_order, created_at, modified_at, modified_by, change_tag, balance_cents, seq)
                    VALUES ('c1', 'h1', 'Kid', 0, 1, 1, 'a1', 'v1', 0, 1);
                INSERT INTO transactions VALUES (7, 't1', 'h1', 'c1', 500, 'gift', 'api', 10, 11, 'a1', NULL, 'r1', 3);
                INSERT INTO transactions VALUES (9, 'r1', 'h1', 'c1', -500, '', 'api', 12, 13, 'a1', 't1', NULL, 4);
                INSERT INTO transactions VALUES (12, 't2', 'h1', 'c1', 42, 'chores', 'manual', 14, 15, 'a1', NULL, NULL, 5);
                """)
            let before = try db.query("SELECT * FROM transactions ORDER BY n").map { $0.values }

            XCTAssertEqual(try Migrator.migrate(db, Schema.migrations.filter { $0.version <= 3 }), [3])
            XCTAssertEqual(try db.query("SELECT * FROM transactions ORDER BY n").map { $0.values }, before)
            XCTAssertEqual(try db.queryOne("PRAGMA integrity_check")?.string(0), "ok")
            XCTAssertTrue(try db.query("PRAGMA foreign_key_check").isEmpty)
            let indexes = Set(try db.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'transactions'").map { $0.string(0) })
            XCTAssertTrue(indexes.isSuperset(of: ["transactions_id", "transactions_child", "transactions_household", "transactions_feed", "transactions_reverses"]), "\(indexes)")

            // Ordinary transactions (reverses_id NULL) are many; a second reversal of t1 is refused.
            try db.run("INSERT INTO transactions VALUES (13, 't3', 'h1', 'c1', 1, '', 'api', 16, 17, 'a1', NULL, NULL, 6)")
            XCTAssertThrowsError(try db.run("INSERT INTO transactions VALUES (14, 'r2', 'h1', 'c1', -500, '', 'api', 18, 19, 'a1', 't1', NULL, 7)"))
            XCTAssertThrowsError(try db.run("INSERT INTO transactions VALUES (15, 't1', 'h1', 'c1', 1, '', 'api', 18, 19, 'a1', NULL, NULL, 7)"),
                                 "ids stay unique")
            // Row numbers go on from the largest, as before.
            try db.run("INSERT INTO transactions (id, household_id, child_id, amount_cents, note, source, created_at, recorded_at, author_account_id, seq) VALUES ('t4', 'h1', 'c1', 1, '', 'api', 20, 21, 'a1', 8)")
            XCTAssertEqual(db.lastInsertRowID, 14)
            // Deleting the household still cascades to its ledger.
            try db.run("DELETE FROM households WHERE id = 'h1'")
            XCTAssertEqual(try db.queryOne("SELECT COUNT(*) FROM transactions")?.int(0), 0)
        }
    }
}

/// Version 4 makes record identity (household, id): a database written by version 3 keeps
/// every row, row number, reversal and balance, `check` finds nothing, and ids taken in one
/// household are free in another.
final class IdentityMigrationTests: XCTestCase {
    private func uuid() -> String { UUID().uuidString.lowercased() }

    func testVersion4KeepsTheLedgerAndScopesIdsToTheirHousehold() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-identity-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let configuration = LedgerAppConfiguration(dataDirectory: dir, host: "127.0.0.1", port: 0)
        let (a1, a2, h1, h2, c1, c2) = (uuid(), uuid(), uuid(), uuid(), uuid(), uuid())
        let (t1, t2, t3) = (uuid(), uuid(), uuid())
        let r1 = SyncRecords.reversalId(of: t1)
        do {
            let db = try SQLiteConnection(path: configuration.databasePath)
            XCTAssertEqual(try Migrator.migrate(db, Schema.migrations.filter { $0.version <= 3 }), [1, 2, 3])
            try db.execute("""
                INSERT INTO accounts VALUES ('\(a1)', 'ann', 'Ann', 1), ('\(a2)', 'bob', 'Bob', 1);
                INSERT INTO households (id, name, currency, owner_account_id, created_at, modified_at, change_tag, incarnation, seq)
                    VALUES ('\(h1)', 'Home', 'EUR', '\(a1)', 1, 1, 'v1', 1, 6), ('\(h2)', 'Away', 'USD', '\(a2)', 1, 1, 'v1', 1, 2);
                INSERT INTO children (id, household_id, name, sort_order, created_at, modified_at, modified_by, change_tag, balance_cents, seq)
                    VALUES ('\(c1)', '\(h1)', 'Kid', 0, 1, 1, '\(a1)', 'v2', 42, 2), ('\(c2)', '\(h2)', 'Other', 0, 1, 1, '\(a2)', 'v1', -7, 1);
                INSERT INTO transactions VALUES (7, '\(t1)', '\(h1)', '\(c1)', 500, 'gift', 'api', 10, 11, '\(a1)', NULL, '\(r1)', 4);
                INSERT INTO transactions VALUES (9, '\(r1)', '\(h1)', '\(c1)', -500, '', 'api', 12, 13, '\(a1)', '\(t1)', NULL, 5);
                INSERT INTO transactions VALUES (12, '\(t2)', '\(h1)', '\(c1)', 42, 'chores', 'manual', 14, 15, '\(a1)', NULL, NULL, 6);
                INSERT INTO transactions VALUES (13, '\(t3)', '\(h2)', '\(c2)', -7, '', 'api', 16, 17, '\(a2)', NULL, NULL, 2);
                """)
        }
        let txColumns = "n, id, household_id, child_id, amount_cents, note, source, created_at, recorded_at, author_account_id, reverses_id, reversed_by_id, seq"
        let childColumns = "rowid, id, household_id, name, sort_order, archived, created_at, modified_at, modified_by, change_tag, balance_cents, seq"
        let before: (tx: [[SQLiteValue]], children: [[SQLiteValue]]) = try {
            let db = try SQLiteConnection(path: configuration.databasePath)
            return (try db.query("SELECT \(txColumns) FROM transactions ORDER BY n").map(\.values),
                    try db.query("SELECT \(childColumns) FROM children ORDER BY rowid").map(\.values))
        }()

        let unmigrated = try AdminCommands.check(configuration).problems
        XCTAssertEqual(unmigrated.count, 1)
        XCTAssertTrue(unmigrated.first?.hasPrefix("schema: the database is at version 3") == true, "\(unmigrated)")

        let db = try SQLiteConnection(path: configuration.databasePath)
        XCTAssertEqual(try Migrator.migrate(db, Schema.migrations), Schema.migrations.map(\.version).filter { $0 > 3 })
        XCTAssertEqual(try db.query(LedgerKeyMigrationTests.withHouseholdIds(txColumns)).map(\.values), before.tx)
        XCTAssertEqual(try db.query("SELECT \(childColumns) FROM children ORDER BY rowid").map(\.values), before.children)
        XCTAssertEqual(try db.query("SELECT reversal_id FROM transactions ORDER BY n").map { $0.values[0] },
                       [t1, r1, t2, t3].map { Schema.reversalKey(SyncRecords.reversalId(of: $0)) })
        XCTAssertEqual(try db.queryOne("PRAGMA integrity_check")?.string(0), "ok")
        XCTAssertTrue(try db.query("PRAGMA foreign_key_check").isEmpty)
        XCTAssertEqual(try db.query("SELECT name FROM sqlite_master WHERE name LIKE '%_v3' OR name LIKE '%_v4'").count, 0)
        let report = try AdminCommands.check(configuration)
        XCTAssertEqual(report.problems, [])
        XCTAssertEqual(report.transactions, 4)

        // The store finds rows by id within their household only.
        let store = SQLiteLedgerTransaction(db)
        XCTAssertEqual(try store.transaction(household: h1, id: t1)?.reversedById, r1)
        XCTAssertNil(try store.transaction(household: h2, id: t1))
        XCTAssertEqual(try store.transaction(household: h1, reservingReversalId: r1)?.id, t1)
        XCTAssertNil(try store.transaction(household: h2, reservingReversalId: r1))

        // The ids of h1 are free in h2: a child and transactions with the same ids.
        try db.run("""
            INSERT INTO children (id, household_id, name, sort_order, created_at, modified_at, modified_by, change_tag, balance_cents, seq)
            VALUES (?, ?, 'Same id', 1, 1, 1, ?, 'v3', 0, 3)
            """, [.text(c1), .text(h2), .text(a2)])
        func new(_ id: String) -> NewTransaction {
            NewTransaction(id: id, childId: c1, amountCents: 5, note: "", source: .api, createdAt: nil, reversesId: nil, clientChosenId: true)
        }
        XCTAssertTrue(try store.addTransaction(household: h2, author: a2, new(r1), now: 2).saved)
        XCTAssertTrue(try store.addTransaction(household: h2, author: a2, new(t1), now: 2).saved)
        // Inside h1, the reversal id of t2 is t2's undo, nothing else.
        XCTAssertThrowsError(try store.addTransaction(household: h1, author: a1, new(SyncRecords.reversalId(of: t2)), now: 2)) {
            guard case .reversalIdReserved(_, let owner)? = $0 as? LedgerStorageError else { return XCTFail("\($0)") }
            XCTAssertEqual(owner.id, t2)
        }
        // Ids stay unique in their household (since version 8 the store keeps them so, not an index).
        XCTAssertThrowsError(try store.insertTransaction(
            LedgerTransaction(id: t2, householdId: h1, childId: c1, amountCents: 1, note: "", source: .api, createdAt: 1, recordedAt: 1,
                              authorAccountId: a1, reversesId: nil, reversedById: nil),
            reversalId: SyncRecords.reversalId(of: t2), seq: 9), "ids stay unique in their household") {
            guard case .transactionIdTaken(let existing)? = $0 as? LedgerStorageError else { return XCTFail("\($0)") }
            XCTAssertEqual(existing.id, t2)
        }
        XCTAssertThrowsError(try store.addTransaction(household: h1, author: a1, NewTransaction(
            id: uuid(), childId: c2, amountCents: 1, note: "", source: .api, createdAt: nil, reversesId: nil, clientChosenId: true), now: 2),
                             "a child of another household is not a child of this one") {
            XCTAssertEqual($0 as? LedgerStorageError, .childNotFound)
        }
        XCTAssertEqual(try db.queryOne("SELECT balance_cents FROM children WHERE household_id = ? AND id = ?", [.text(h1), .text(c1)])?.int(0), 42)
        XCTAssertEqual(try db.queryOne("SELECT balance_cents FROM children WHERE household_id = ? AND id = ?", [.text(h2), .text(c1)])?.int(0), 10)
        XCTAssertEqual(try AdminCommands.check(configuration).problems, [])

        // Row numbers go on from the largest; deleting a household takes exactly its own ledger.
        XCTAssertEqual(db.lastInsertRowID, 15)
        try store.deleteHousehold(id: h1)
        XCTAssertEqual(try db.query("SELECT id FROM transactions ORDER BY n").map { $0.string(0) }, [t3, r1, t1])
        XCTAssertEqual(try db.query("SELECT household_id FROM children").map { $0.string(0) }, [h2, h2])
    }

    /// The writer's statements and the ledger's pages use the indexes (the statements the
    /// store runs, as of schema version 8).
    func testHotStatementsUseTheIndexes() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try Migrator.migrate(db, Schema.migrations)
        func plan(_ sql: String) throws -> String {
            // Every parameter NULL: `?N` counts up to the largest N, a bare `?` one each.
            let marks = sql.split(separator: "?", omittingEmptySubsequences: false).dropFirst()
            let numbered = marks.compactMap { Int($0.prefix { $0.isNumber }) }
            let count = numbered.isEmpty ? marks.count : numbered.max()!
            return try db.query("EXPLAIN QUERY PLAN " + sql, Array(repeating: .null, count: count)).map { $0.string(3) }
                .joined(separator: "; ")
        }
        typealias Store = SQLiteLedgerTransaction
        let household = "SEARCH h USING INDEX sqlite_autoindex_households_1 (id=?)"
        let cases: [(String, [String])] = [
            // By the row the server's id index names (version 8); without it, among the household's rows.
            (Store.transactionSQL[0], ["SEARCH t USING INTEGER PRIMARY KEY (rowid=?)", "SEARCH h USING INDEX households_ledger_key (ledger_key=?)"]),
            (Store.reservingSQL[0], ["SEARCH t USING INTEGER PRIMARY KEY (rowid=?)", "SEARCH h USING INDEX households_ledger_key (ledger_key=?)"]),
            (Store.markReversedSQL[0], ["USING INTEGER PRIMARY KEY (rowid=?)", "USING INDEX sqlite_autoindex_households_1 (id=?)"]),
            (Store.transactionSQL[1], [household, "(household_key=?)"]),
            (Store.reservingSQL[1], [household, "(household_key=?)"]),
            (Store.markReversedSQL[1], ["(household_key=?)", "USING INDEX sqlite_autoindex_households_1 (id=?)"]),
            ("SELECT balance_cents FROM children WHERE id = 'c' AND household_id = 'h'", ["USING INDEX sqlite_autoindex_children_1 (household_id=? AND id=?)"]),
            ("UPDATE children SET balance_cents = 1 WHERE household_id = 'h' AND id = 'c'", ["USING INDEX sqlite_autoindex_children_1 (household_id=? AND id=?)"]),
            (Store.newestUndoableSQL, [household, "SEARCH t USING INDEX transactions_child (household_key=? AND child_id=?)"]),
            (Store.childTransactionsSQL, [household, "SEARCH t USING INDEX transactions_child (household_key=? AND child_id=? AND n<?)"]),
            // The household's list merges its children's (version 9).
            (Store.householdChildIdsSQL, ["USING COVERING INDEX sqlite_autoindex_children_1 (household_id=?)"]),
            (Store.childRowNumbersSQL, ["SEARCH transactions USING COVERING INDEX transactions_child (household_key=? AND child_id=? AND n>? AND n<?)"]),
            (Store.rowsByNumberSQL, [household, "SEARCH t USING INTEGER PRIMARY KEY (rowid=?)"]),
            (Store.changedTransactionsSQL[0], [household, "SEARCH t USING INDEX transactions_feed (household_key=? AND seq>?)"]),
            (Store.changedTransactionsSQL[1], [household, "SEARCH t USING INDEX transactions_feed (household_key=? AND seq=?)"]),
            (Schema.ledgerKey(1), ["USING INDEX sqlite_autoindex_households_1 (id=?)"]),
        ]
        for (sql, expected) in cases {
            let p = try plan(sql.hasPrefix("(") ? "SELECT " + sql : sql)
            for part in expected {
                XCTAssertTrue(p.contains(part), "\(sql)\n  plan: \(p)\n  expected: \(part)")
            }
            // (The page's row numbers, a JSON array, are scanned: that is the list asked for.)
            let scans = p.replacingOccurrences(of: "SCAN CONSTANT ROW", with: "").replacingOccurrences(of: "SCAN j VIRTUAL TABLE", with: "")
            XCTAssertFalse(scans.contains("SCAN") || p.contains("TEMP B-TREE"), "\(sql)\n  plan: \(p)")
        }
    }
}

/// The household change sequence follows the row, whatever the remembered last value says.
final class ChangeSequenceTests: XCTestCase {
    func testNextSeqFollowsTheRowAfterRollbacksAndRecreation() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try Migrator.migrate(db, Schema.migrations)
        let h = UUID().uuidString.lowercased()
        func create(seq: Int64) throws {
            try db.run("""
                INSERT INTO households (id, name, currency, owner_account_id, created_at, modified_at, change_tag, incarnation, seq)
                VALUES (?, 'Home', 'EUR', 'a1', 1, 1, 'v1', 1, ?)
                """, [.text(h), .integer(seq)])
        }
        try db.execute("PRAGMA foreign_keys = OFF")
        try create(seq: 0)
        XCTAssertEqual(try SQLiteLedgerTransaction.nextSeq(db, h), 1)
        XCTAssertEqual(try SQLiteLedgerTransaction.nextSeq(db, h), 2)
        try db.run("UPDATE households SET seq = 10 WHERE id = ?", [.text(h)])
        XCTAssertEqual(try SQLiteLedgerTransaction.nextSeq(db, h), 11, "changed behind its back")
        try db.execute("BEGIN")
        XCTAssertEqual(try SQLiteLedgerTransaction.nextSeq(db, h), 12)
        try db.execute("ROLLBACK")
        XCTAssertEqual(try SQLiteLedgerTransaction.nextSeq(db, h), 12, "a rolled-back value is handed out again")
        try db.run("DELETE FROM households WHERE id = ?", [.text(h)])
        XCTAssertThrowsError(try SQLiteLedgerTransaction.nextSeq(db, h))
        try create(seq: 0)
        XCTAssertEqual(try SQLiteLedgerTransaction.nextSeq(db, h), 1, "a household created again starts over")
    }
}
