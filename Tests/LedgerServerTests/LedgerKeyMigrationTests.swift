import Foundation
import LedgerModel
@testable import LedgerServer
import SQLiteKit
import XCTest

/// Version 6 keys the ledger's rows by their household's integer `ledger_key` and drops the
/// table's foreign keys: a database written by version 5 keeps every row, row number,
/// reversal and balance; new households get new keys; the code does what the foreign keys
/// did (a household's ledger goes with it, `check` reports rows without a household or child).
final class LedgerKeyMigrationTests: XCTestCase {
    private func uuid() -> String { UUID().uuidString.lowercased() }

    /// `SELECT columns FROM transactions ORDER BY n` for a database at version 6 or later,
    /// where `household_id` is read from the row's household.
    static func withHouseholdIds(_ columns: String) -> String {
        let named = columns.split(separator: ",").map { c -> String in
            let name = c.trimmingCharacters(in: .whitespaces)
            return name == "household_id" ? "h.id" : "t." + name
        }
        return "SELECT \(named.joined(separator: ", ")) FROM transactions t JOIN households h ON h.ledger_key = t.household_key ORDER BY t.n"
    }

    /// The server says which migrations it ran at start (version 6 rewrites the ledger and
    /// takes a while on a large one), and says nothing when there were none.
    func testTheServerLogsTheMigrationsItRan() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-migrated-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let configuration = LedgerAppConfiguration(dataDirectory: dir, host: "127.0.0.1", port: 0)
        _ = try Migrator.migrate(SQLiteConnection(path: configuration.databasePath), Schema.migrations.filter { $0.version <= 5 })
        func migrated() throws -> [JSONValue] {
            let server = try ServerProcess(binary: ServerProcess.binary(), dataDir: dir)
            defer { server.kill9() }
            let lines = try String(contentsOfFile: server.logPath, encoding: .utf8).split(separator: "\n")
            return lines.compactMap { try? JSONValue.parse(String($0)) }.filter { $0["event"]?.stringValue == "migrated" }
        }
        let first = try migrated()
        XCTAssertEqual(first.count, 1)
        XCTAssertEqual(first.first?["versions"], .array(Schema.migrations.map(\.version).filter { $0 > 5 }.map { .int(Int64($0)) }))
        XCTAssertNotNil(first.first?["ms"]?.intValue)
        XCTAssertEqual(try migrated().count, 0, "nothing to migrate the second time")
    }

    func testVersion6KeepsTheLedgerAndKeysItByHousehold() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-ledger-key-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let configuration = LedgerAppConfiguration(dataDirectory: dir, host: "127.0.0.1", port: 0)
        let (a1, a2, h1, h2, h3, c1, c2) = (uuid(), uuid(), uuid(), uuid(), uuid(), uuid(), uuid())
        let (t1, t2, t3, t4) = (uuid(), uuid(), uuid(), uuid())
        let r1 = SyncRecords.reversalId(of: t1)
        let key = SyncRecords.reversalId(of:)
        do {
            let db = try SQLiteConnection(path: configuration.databasePath)
            XCTAssertEqual(try Migrator.migrate(db, Schema.migrations.filter { $0.version <= 5 }), [1, 2, 3, 4, 5])
            // Three households, the second deleted (a gap in the rowids); the same child id
            // in the first and the third.
            try db.execute("""
                INSERT INTO accounts VALUES ('\(a1)', 'ann', 'Ann', 1), ('\(a2)', 'bob', 'Bob', 1);
                INSERT INTO households (id, name, currency, owner_account_id, created_at, modified_at, change_tag, incarnation, seq)
                    VALUES ('\(h1)', 'Home', 'EUR', '\(a1)', 1, 1, 'v1', 1, 6), ('\(h2)', 'Gone', 'EUR', '\(a1)', 1, 1, 'v1', 1, 1),
                           ('\(h3)', 'Away', 'USD', '\(a2)', 1, 1, 'v1', 1, 4);
                INSERT INTO children (id, household_id, name, sort_order, created_at, modified_at, modified_by, change_tag, balance_cents, seq)
                    VALUES ('\(c1)', '\(h1)', 'Kid', 0, 1, 1, '\(a1)', 'v2', 42, 2), ('\(c2)', '\(h3)', 'Other', 0, 1, 1, '\(a2)', 'v1', -7, 1),
                           ('\(c1)', '\(h3)', 'Same id', 1, 1, 1, '\(a2)', 'v1', 10, 2), ('\(c2)', '\(h2)', 'Gone', 0, 1, 1, '\(a1)', 'v1', 0, 1);
                INSERT INTO transactions VALUES (7, '\(t1)', '\(h1)', '\(c1)', 500, 'gift', 'api', 10, 11, '\(a1)', NULL, '\(r1)', 4, '\(key(t1))');
                INSERT INTO transactions VALUES (9, '\(r1)', '\(h1)', '\(c1)', -500, '', 'api', 12, 13, '\(a1)', '\(t1)', NULL, 5, '\(key(r1))');
                INSERT INTO transactions VALUES (12, '\(t2)', '\(h1)', '\(c1)', 42, 'chores', 'manual', 14, 15, '\(a1)', NULL, NULL, 6, '\(key(t2))');
                INSERT INTO transactions VALUES (13, '\(t3)', '\(h3)', '\(c2)', -7, '', 'api', 16, 17, '\(a2)', NULL, NULL, 3, '\(key(t3))');
                INSERT INTO transactions VALUES (20, '\(t4)', '\(h3)', '\(c1)', 10, '', 'api', 18, 19, '\(a2)', NULL, NULL, 4, '\(key(t4))');
                INSERT INTO transactions VALUES (21, '\(t4)', '\(h2)', '\(c2)', 0, '', 'api', 18, 19, '\(a1)', NULL, NULL, 1, '\(key(t4))');
                DELETE FROM households WHERE id = '\(h2)';
                """)
        }
        let txColumns = "n, id, household_id, child_id, amount_cents, note, source, created_at, recorded_at, author_account_id, "
            + "reverses_id, reversed_by_id, seq, reversal_id"
        let before = try SQLiteConnection(path: configuration.databasePath).query("SELECT \(txColumns) FROM transactions ORDER BY n").map(\.values)
        XCTAssertEqual(before.count, 5, "the deleted household's ledger went with it")

        let unmigrated = try AdminCommands.check(configuration).problems
        XCTAssertEqual(unmigrated.count, 1)
        XCTAssertTrue(unmigrated.first?.hasPrefix("schema: the database is at version 5") == true, "\(unmigrated)")

        let db = try SQLiteConnection(path: configuration.databasePath)
        XCTAssertEqual(try Migrator.migrate(db, Schema.migrations), Schema.migrations.map(\.version).filter { $0 > 5 })
        XCTAssertEqual(try db.query(Self.withHouseholdIds(txColumns)).map(\.values), before)
        XCTAssertEqual(try db.query("SELECT ledger_key FROM households ORDER BY rowid").map { $0.int(0) }, [1, 3], "keys are the rowids")
        XCTAssertEqual(try db.queryOne("PRAGMA integrity_check")?.string(0), "ok")
        XCTAssertTrue(try db.query("PRAGMA foreign_key_check").isEmpty)
        XCTAssertTrue(try db.query("PRAGMA foreign_key_list(transactions)").isEmpty, "the ledger has no foreign keys")
        XCTAssertEqual(try db.query("SELECT name FROM sqlite_master WHERE name LIKE '%_v6'").count, 0)
        let indexes = Set(try db.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'transactions'").map { $0.string(0) })
        XCTAssertEqual(indexes, ["transactions_id", "transactions_child", "transactions_household", "transactions_feed", "transactions_reverses"])
        var report = try AdminCommands.check(configuration)
        XCTAssertEqual(report.problems, [])
        XCTAssertEqual(report.transactions, 5)

        // The store reads each household's own ledger, the household's id from its row.
        let store = SQLiteLedgerTransaction(db)
        XCTAssertEqual(try store.transaction(household: h1, id: t1)?.reversedById, r1)
        XCTAssertEqual(try store.transaction(household: h1, id: t1)?.householdId, h1)
        XCTAssertNil(try store.transaction(household: h3, id: t1))
        XCTAssertEqual(try store.transaction(household: h1, reservingReversalId: r1)?.id, t1)
        XCTAssertEqual(try store.transactions(household: h3, child: c1, before: nil, limit: 10).items.map(\.id), [t4])
        XCTAssertEqual(try store.transactions(household: h1, child: nil, before: nil, limit: 10).items.map(\.id), [t2, r1, t1])
        XCTAssertEqual(try store.transactions(household: h1, child: nil, before: 12, limit: 1).items.map(\.id), [r1])
        let feed = try store.changes(household: h3, after: 0, onlySeq: nil, limit: 10)
        XCTAssertEqual(feed.transactions.map(\.id), [t3, t4])
        XCTAssertEqual(feed.transactions.map(\.householdId), [h3, h3])
        XCTAssertEqual(feed.transactionSeqs, [3, 4])
        XCTAssertEqual(try store.newestUndoable(household: h1, child: c1)?.id, t2)

        // A new household takes the next key; its ledger is its own.
        let h4 = uuid()
        try store.insertHousehold(HouseholdRecord(id: h4, name: "New", currency: "EUR", ownerAccountId: a1, createdAt: 2, modifiedAt: 2,
                                                  changeTag: "v1", shared: false), incarnation: 1)
        XCTAssertEqual(try db.queryOne("SELECT ledger_key FROM households WHERE id = ?", [.text(h4)])?.int(0), 4)
        try store.insertChild(Child(id: c1, householdId: h4, name: "Kid", sortOrder: 0, archived: false, createdAt: 2, modifiedAt: 2,
                                    modifiedBy: a1, changeTag: "v1", balanceCents: 0), seq: 2)
        func new(_ id: String, child: String, cents: Int64) -> NewTransaction {
            NewTransaction(id: id, childId: child, amountCents: cents, note: "", source: .api, createdAt: nil, reversesId: nil, clientChosenId: true)
        }
        XCTAssertTrue(try store.addTransaction(household: h4, author: a1, new(t1, child: c1, cents: 5), now: 3).saved)
        XCTAssertFalse(try store.addTransaction(household: h4, author: a1, new(t1, child: c1, cents: 5), now: 3).saved, "a replay")
        XCTAssertThrowsError(try store.addTransaction(household: h4, author: a1, new(uuid(), child: c2, cents: 1), now: 3)) {
            XCTAssertEqual($0 as? LedgerStorageError, .childNotFound, "a child of another household is not one of this")
        }
        XCTAssertEqual(try store.balance(household: h4, child: c1), 5)
        XCTAssertEqual(try store.transactions(household: h4, child: nil, before: nil, limit: 10).items.map(\.id), [t1])
        XCTAssertEqual(try store.transaction(household: h1, id: t1)?.amountCents, 500, "the same id in h1 is untouched")
        report = try AdminCommands.check(configuration)
        XCTAssertEqual(report.problems, [])
        XCTAssertEqual(report.transactions, 6)

        // Deleting a household takes exactly its own ledger, with no foreign key to cascade along.
        try store.deleteHousehold(id: h1)
        XCTAssertEqual(try db.query("SELECT id FROM transactions ORDER BY n").map { $0.string(0) }, [t3, t4, t1])
        XCTAssertEqual(try AdminCommands.check(configuration).problems, [])

        // What the foreign keys refused, `check` reports.
        try db.run("""
            INSERT INTO transactions (id, household_key, child_id, amount_cents, note, source, created_at, recorded_at, author_account_id, seq, reversal_id)
            VALUES (?1, 99, ?2, 0, '', 'api', 1, 1, ?3, 9, ?4), (?5, \(Schema.ledgerKey(6)), ?7, 0, '', 'api', 1, 1, ?3, 9, ?8)
            """, [.text(t2), .text(c1), .text(a1), .text(key(t2)), .text(r1), .text(h3), .text("no-such-child"), .text(key(r1))])
        XCTAssertEqual(try AdminCommands.check(configuration).problems, [
            "ledger: transaction \(t2) belongs to no household (ledger key 99)",
            "ledger: transaction \(r1) names child no-such-child, which its household does not have",
        ])
    }
}
