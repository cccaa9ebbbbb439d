import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStorageSQLite
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

    /// Rows read before version 7 (their last column the key as text), as version 7 stores them.
    static func withStoredKeys(_ rows: [[SQLiteValue]]) -> [[SQLiteValue]] {
        rows.map { row in
            guard case .text(let key)? = row.last else { return row }
            return row.dropLast() + [Schema.reversalKey(key)]
        }
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
        XCTAssertEqual(try db.query(Self.withHouseholdIds(txColumns)).map(\.values), Self.withStoredKeys(before))
        XCTAssertEqual(try db.query("SELECT ledger_key FROM households ORDER BY rowid").map { $0.int(0) }, [1, 3], "keys are the rowids")
        XCTAssertEqual(try db.queryOne("PRAGMA integrity_check")?.string(0), "ok")
        XCTAssertTrue(try db.query("PRAGMA foreign_key_check").isEmpty)
        XCTAssertTrue(try db.query("PRAGMA foreign_key_list(transactions)").isEmpty, "the ledger has no foreign keys")
        XCTAssertEqual(try db.query("SELECT name FROM sqlite_master WHERE name LIKE '%_v6'").count, 0)
        let indexes = Set(try db.query("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'transactions'").map { $0.string(0) })
        // (transactions_id, which version 6 built, left the database with version 8, and
        // transactions_household with version 9.)
        XCTAssertEqual(indexes, ["transactions_child", "transactions_feed", "transactions_reverses"])
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
            """, [.text(t2), .text(c1), .text(a1), Schema.reversalKey(key(t2)), .text(r1), .text(h3), .text("no-such-child"),
                  Schema.reversalKey(key(r1))])
        XCTAssertEqual(try AdminCommands.check(configuration).problems, [
            "ledger: transaction \(t2) belongs to no household (ledger key 99)",
            "ledger: transaction \(r1) names child no-such-child, which its household does not have",
        ])
    }

    func testAKeyIsItsUUIDsBytesAndOtherTextStaysText() {
        let id = "6f1c7a52-3b0e-4c8e-9d55-2a4b8e1f0c3d"
        let bytes: [UInt8] = [0x6f, 0x1c, 0x7a, 0x52, 0x3b, 0x0e, 0x4c, 0x8e, 0x9d, 0x55, 0x2a, 0x4b, 0x8e, 0x1f, 0x0c, 0x3d]
        XCTAssertEqual(Schema.uuidBytes(id), bytes)
        XCTAssertEqual(Schema.uuidBytes(id.uppercased()), bytes)
        XCTAssertEqual(Schema.reversalKey(id), .blob(bytes))
        for other in ["not-a-uuid:x", "", String(id.dropLast()), id + "0", "6f1c7a52_3b0e-4c8e-9d55-2a4b8e1f0c3d",
                      "6f1c7a523b0e-4c8e-9d55-2a4b8e1f0c3d0", "6f1c7a52-3b0e-4c8e-9d55-2a4b8e1f0c3g", "6f1c7a52-3b0e-4c8e-9d55-2a4b8e1f0c3\u{e9}"] {
            XCTAssertNil(Schema.uuidBytes(other), other)
            XCTAssertEqual(Schema.reversalKey(other), .text(other), other)
        }
    }

    /// Version 7 stores each transaction's key as its UUID's 16 bytes: every row keeps its
    /// number and fields, lookups by id, replays, reserved reversal ids and undo work on the
    /// converted keys, a key that is not a UUID stays text, and `check` reports a key left as text.
    func testVersion7StoresTheKeysAsBytes() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-key-bytes-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let configuration = LedgerAppConfiguration(dataDirectory: dir, host: "127.0.0.1", port: 0)
        let (a1, h1, c1) = (uuid(), uuid(), uuid())
        let (t1, t2) = (uuid(), uuid())
        let r1 = SyncRecords.reversalId(of: t1)
        let legacy = "legacy-1"
        let db = try SQLiteConnection(path: configuration.databasePath)
        XCTAssertEqual(try Migrator.migrate(db, Schema.migrations.filter { $0.version <= 6 }), [1, 2, 3, 4, 5, 6])
        try db.execute("""
            INSERT INTO accounts VALUES ('\(a1)', 'ann', 'Ann', 1);
            INSERT INTO households (id, name, currency, owner_account_id, created_at, modified_at, change_tag, incarnation, seq, ledger_key)
                VALUES ('\(h1)', 'Home', 'EUR', '\(a1)', 1, 1, 'v1', 1, 4, 1);
            INSERT INTO children (id, household_id, name, sort_order, created_at, modified_at, modified_by, change_tag, balance_cents, seq)
                VALUES ('\(c1)', '\(h1)', 'Kid', 0, 1, 1, '\(a1)', 'v2', 42, 1);
            INSERT INTO transactions VALUES (3, 1, '\(t1)', '\(c1)', 500, 'gift', 'api', 10, 11, '\(a1)', NULL, '\(r1)', 3, '\(SyncRecords.reversalId(of: t1))');
            INSERT INTO transactions VALUES (5, 1, '\(r1)', '\(c1)', -500, '', 'api', 12, 13, '\(a1)', '\(t1)', NULL, 4, '\(SyncRecords.reversalId(of: r1))');
            INSERT INTO transactions VALUES (8, 1, '\(t2)', '\(c1)', 40, 'chores', 'api', 14, 15, '\(a1)', NULL, NULL, 2, '\(SyncRecords.reversalId(of: t2))');
            INSERT INTO transactions VALUES (9, 1, '\(legacy)', '\(c1)', 2, '', 'api', 16, 17, '\(a1)', NULL, NULL, 1, 'not-a-uuid:\(legacy)');
            """)
        let columns = "t.n, t.id, t.household_key, t.child_id, t.amount_cents, t.note, t.source, t.created_at, t.recorded_at, "
            + "t.author_account_id, t.reverses_id, t.reversed_by_id, t.seq, t.reversal_id"
        let before = try db.query("SELECT \(columns) FROM transactions t ORDER BY n").map(\.values)
        XCTAssertEqual(try AdminCommands.check(configuration).problems.count, 1, "version 6 is not the last")

        XCTAssertEqual(try Migrator.migrate(db, Schema.migrations), Schema.migrations.map(\.version).filter { $0 > 6 })
        XCTAssertEqual(try db.query("SELECT \(columns) FROM transactions t ORDER BY n").map(\.values), Self.withStoredKeys(before))
        XCTAssertEqual(try db.query("SELECT typeof(reversal_id), length(reversal_id) FROM transactions ORDER BY n").map { "\($0.string(0)) \($0.int(1))" },
                       ["blob 16", "blob 16", "blob 16", "text \("not-a-uuid:\(legacy)".count)"])
        XCTAssertEqual(try db.queryOne("SELECT reversal_id FROM transactions WHERE n = 3")?.values.first,
                       .blob(withUnsafeBytes(of: UUID(uuidString: SyncRecords.reversalId(of: t1))!.uuid) { Array($0) }), "the UUID's own bytes")
        XCTAssertEqual(try db.queryOne("PRAGMA integrity_check")?.string(0), "ok")
        XCTAssertEqual(try AdminCommands.check(configuration).problems, [])

        let store = SQLiteLedgerTransaction(db)
        XCTAssertEqual(try store.transaction(household: h1, id: t1)?.reversedById, r1)
        XCTAssertEqual(try store.transaction(household: h1, id: r1)?.reversesId, t1)
        XCTAssertEqual(try store.transaction(household: h1, reservingReversalId: SyncRecords.reversalId(of: t2))?.id, t2)
        XCTAssertNil(try store.transaction(household: h1, id: legacy), "an id that is not a UUID is not looked up")
        func new(_ id: String, cents: Int64) -> NewTransaction {
            NewTransaction(id: id, childId: c1, amountCents: cents, note: "", source: .api, createdAt: nil, reversesId: nil, clientChosenId: true)
        }
        XCTAssertThrowsError(try store.addTransaction(household: h1, author: a1, new(t2, cents: 41), now: 20)) {
            guard case .transactionIdTaken(let existing)? = $0 as? LedgerStorageError else { return XCTFail("\($0)") }
            XCTAssertEqual(existing.id, t2)
        }
        XCTAssertThrowsError(try store.addTransaction(household: h1, author: a1, new(SyncRecords.reversalId(of: t2), cents: 1), now: 20)) {
            guard case .reversalIdReserved(_, let owner)? = $0 as? LedgerStorageError else { return XCTFail("\($0)") }
            XCTAssertEqual(owner.id, t2)
        }
        let t3 = uuid()
        XCTAssertTrue(try store.addTransaction(household: h1, author: a1, new(t3, cents: 7), now: 21).saved)
        XCTAssertFalse(try store.addTransaction(household: h1, author: a1, new(t3, cents: 7), now: 21).saved, "a replay")
        XCTAssertEqual(try store.transaction(household: h1, id: t3)?.amountCents, 7)
        let undo = try store.undoLast(household: h1, author: a1, child: c1, expected: t3, now: 22)
        XCTAssertEqual(undo.transaction.reversesId, t3)
        XCTAssertEqual(try store.transaction(household: h1, id: t3)?.reversedById, SyncRecords.reversalId(of: t3))
        XCTAssertEqual(try db.query("SELECT typeof(reversal_id) FROM transactions WHERE n > 9").map { $0.string(0) }, ["blob", "blob"])
        XCTAssertEqual(try store.balance(household: h1, child: c1), 42)
        XCTAssertEqual(try AdminCommands.check(configuration).problems, [])

        // A key written as text, the way version 6 wrote it, is no longer the row's key.
        try db.run("UPDATE transactions SET reversal_id = ? WHERE id = ?", [.text(SyncRecords.reversalId(of: t2)), .text(t2)])
        XCTAssertEqual(try AdminCommands.check(configuration).problems, ["key: transaction \(t2) has the wrong reversal_id"])
    }
}
