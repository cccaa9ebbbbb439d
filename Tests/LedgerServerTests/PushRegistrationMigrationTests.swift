import Foundation
@testable import LedgerServer
@testable import LedgerStorageSQLite
import SQLiteKit
import XCTest

/// Version 19 rebuilds `push_registrations` (a child's device registers too) and
/// `push_wakes`: a database written by version 18 keeps every registration and every wake,
/// and a wake still goes with its registration.
final class PushRegistrationMigrationTests: XCTestCase {
    func testVersion19KeepsRegistrationsAndWakes() throws {
        try withTemporaryDatabase("push19") { path in
            let db = try SQLiteConnection(path: path)
            _ = try Migrator.migrate(db, Schema.migrations.filter { $0.version <= 18 })
            try db.execute("""
                INSERT INTO accounts VALUES ('a1', 'ann', 'Ann', 1);
                INSERT INTO tokens (id, account_id, hash, device_name, created_at) VALUES ('t1', 'a1', x'01', 'Phone', 1);
                INSERT INTO push_registrations VALUES ('t1', 'a1', 'com.example.app', 'abcd', 'http://gw/notify', 5);
                INSERT INTO push_wakes (token_id, household_id, seq, sent_seq, due_at, quiet_until, attempts, queued_at)
                    VALUES ('t1', 'h1', 7, 3, 100, 50, 2, 90);
                """)
            XCTAssertEqual(try Migrator.migrate(db, Schema.migrations.filter { $0.version <= 19 }), [19])
            let r = try XCTUnwrap(db.queryOne("""
                SELECT token_id, account_id, household_id, child_id, app_id, push_key, gateway, registered_at FROM push_registrations
                """))
            XCTAssertEqual(r.values, [.text("t1"), .text("a1"), .null, .null, .text("com.example.app"), .text("abcd"),
                                      .text("http://gw/notify"), .integer(5)])
            XCTAssertEqual(try db.query("SELECT token_id, household_id, seq, sent_seq, due_at, quiet_until, attempts, queued_at FROM push_wakes")
                .map(\.values), [[.text("t1"), .text("h1"), .integer(7), .integer(3), .integer(100), .integer(50), .integer(2), .integer(90)]])
            XCTAssertEqual(try db.queryOne("PRAGMA integrity_check")?.string(0), "ok")
            XCTAssertTrue(try db.query("PRAGMA foreign_key_check").isEmpty)
            XCTAssertEqual(try db.queryOne("SELECT count(*) FROM sqlite_master WHERE name LIKE '%_v18'")?.int(0), 0)
            // A registration is either an account's or a child's device's.
            XCTAssertThrowsError(try db.run("""
                INSERT INTO push_registrations (token_id, account_id, household_id, child_id, app_id, push_key, gateway, registered_at)
                VALUES ('t2', NULL, NULL, NULL, 'a', 'b', 'g', 1)
                """))
            // A wake still goes with its registration.
            try db.run("DELETE FROM push_registrations WHERE token_id = 't1'")
            XCTAssertEqual(try db.queryOne("SELECT count(*) FROM push_wakes")?.int(0), 0)
        }
    }
}
