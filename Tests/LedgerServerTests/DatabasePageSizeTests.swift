import Foundation
@testable import LedgerServer
@testable import LedgerStorageSQLite
import SQLiteKit
import XCTest

/// A database the server creates gets `SQLiteLedgerStorage.newDatabasePageSize`; one that exists keeps
/// the page size it was made with, and opens and migrates as before.
final class DatabasePageSizeTests: XCTestCase {
    private func withDataDirectory(_ body: (LedgerAppConfiguration) throws -> Void) throws {
        try withTemporaryDataDirectory("pagesize", body)
    }

    func testANewDatabaseGetsTheServersPageSize() throws {
        try withDataDirectory { configuration in
            let db = try SQLiteLedgerStorage.openWriter(path: configuration.databasePath, cacheBytes: configuration.writerCacheBytes)
            XCTAssertEqual(SQLiteLedgerStorage.newDatabasePageSize, 2048)
            XCTAssertEqual(try db.queryOne("PRAGMA page_size")?.int(0), 2048)
            XCTAssertEqual(try db.queryOne("PRAGMA journal_mode")?.string(0), "wal")
            // Other connections (readers, the checkpointer) see the same file.
            let reader = try SQLiteConnection(path: configuration.databasePath, mode: .readOnly)
            XCTAssertEqual(try reader.queryOne("PRAGMA page_size")?.int(0), 2048)
        }
    }

    func testAnExistingDatabaseKeepsItsPageSize() throws {
        try withDataDirectory { configuration in
            do {
                let old = try SQLiteConnection(path: configuration.databasePath)
                XCTAssertEqual(try Migrator.migrate(old, Schema.migrations.filter { $0.version <= 1 }), [1])
                try old.execute("INSERT INTO accounts VALUES ('a1', 'ann', 'Ann', 1)")
                XCTAssertEqual(try old.queryOne("PRAGMA page_size")?.int(0), 4096)
            }
            let db = try SQLiteLedgerStorage.openWriter(path: configuration.databasePath, cacheBytes: configuration.writerCacheBytes)
            XCTAssertEqual(try db.queryOne("PRAGMA page_size")?.int(0), 4096)
            XCTAssertEqual(try db.queryOne("SELECT handle FROM accounts WHERE id = 'a1'")?.string(0), "ann")
            XCTAssertEqual(try db.queryOne("SELECT MAX(version) FROM schema_version").map { Int($0.int(0)) },
                           Schema.migrations.last?.version)
            XCTAssertEqual(try db.queryOne("PRAGMA integrity_check")?.string(0), "ok")
        }
    }
}
