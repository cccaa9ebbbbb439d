import Foundation
@testable import LedgerServer
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

            XCTAssertEqual(try Migrator.migrate(db, Schema.migrations), [3])
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
        XCTAssertEqual(try LedgerStore.nextSeq(db, h), 1)
        XCTAssertEqual(try LedgerStore.nextSeq(db, h), 2)
        try db.run("UPDATE households SET seq = 10 WHERE id = ?", [.text(h)])
        XCTAssertEqual(try LedgerStore.nextSeq(db, h), 11, "changed behind its back")
        try db.execute("BEGIN")
        XCTAssertEqual(try LedgerStore.nextSeq(db, h), 12)
        try db.execute("ROLLBACK")
        XCTAssertEqual(try LedgerStore.nextSeq(db, h), 12, "a rolled-back value is handed out again")
        try db.run("DELETE FROM households WHERE id = ?", [.text(h)])
        XCTAssertThrowsError(try LedgerStore.nextSeq(db, h))
        try create(seq: 0)
        XCTAssertEqual(try LedgerStore.nextSeq(db, h), 1, "a household created again starts over")
    }
}
