import Foundation
import SQLiteKit
import XCTest

/// Every connection's page cache is SQLite's default one behind a wrapper that gives the
/// B-tree's page swaps a key just past the cache's pages instead of the locking page's
/// number (see `kidledger_install_page_cache`). The wrapper must be in force and invisible:
/// contents, rollbacks and savepoints exactly as with the default cache.
final class PageCacheTests: XCTestCase {
    /// Random keys in an index split pages all over it, which makes the B-tree swap pages
    /// to keep them in order: the swaps go through the wrapper, and the data stay whole.
    func testPageSwapsGoThroughTheWrapperAndTheDatabaseStaysWhole() throws {
        for pageSize in [1024, 2048, 4096] {
            let path = temporaryDatabasePath("pagecache")
            let db = try SQLiteConnection(path: path, walMode: false)
            try db.execute("PRAGMA page_size = \(pageSize); PRAGMA journal_mode = WAL; PRAGMA cache_size = -65536")
            XCTAssertTrue(SQLiteConnection.applyProcessSettings(), "the process settings are in force")
            XCTAssertEqual(try db.queryOne("PRAGMA page_size")?.int(0), Int64(pageSize))
            try db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, pad BLOB NOT NULL)")
            let swapsBefore = SQLiteConnection.pageCacheSwaps
            var ids: [String] = []
            for _ in 0..<40 {
                try db.transaction {
                    for _ in 0..<100 {
                        let id = UUID().uuidString
                        try db.run("INSERT INTO t (id, pad) VALUES (?, randomblob(?))", [.text(id), .integer(Int64.random(in: 10...300))])
                        ids.append(id)
                    }
                }
            }
            XCTAssertGreaterThan(SQLiteConnection.pageCacheSwaps, swapsBefore, "page size \(pageSize)")
            try assertWhole(db, ids)
            // Another connection, with a cold cache of its own, reads the same.
            try assertWhole(try SQLiteConnection(path: path, mode: .readOnly), ids)
        }
    }

    /// A rolled-back transaction that grew the file (its new pages and swapped pages are
    /// dropped by the cache's truncation) and a savepoint rolled back inside a committed
    /// transaction leave exactly what was committed, and writing goes on.
    func testRollbacksAfterPageSwapsLeaveWhatWasCommitted() throws {
        let path = temporaryDatabasePath("pagecache")
        let db = try SQLiteConnection(path: path)
        try db.execute("PRAGMA cache_size = -65536")
        try db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, pad BLOB NOT NULL)")
        var ids: [String] = []
        func insert(_ count: Int, into list: inout [String]) throws {
            for _ in 0..<count {
                let id = UUID().uuidString
                try db.run("INSERT INTO t (id, pad) VALUES (?, randomblob(200))", [.text(id)])
                list.append(id)
            }
        }
        try db.transaction { try insert(2_000, into: &ids) }
        for round in 0..<5 {
            var discarded: [String] = []
            try db.execute("BEGIN IMMEDIATE")
            try insert(1_500, into: &discarded)
            try db.execute("ROLLBACK")
            try assertWhole(db, ids)
            try db.execute("BEGIN IMMEDIATE")
            try insert(300, into: &ids)
            try db.execute("SAVEPOINT s")
            try insert(1_000, into: &discarded)
            try db.execute("ROLLBACK TO s")
            try db.execute("RELEASE s")
            try insert(300, into: &ids)
            try db.execute("COMMIT")
            try assertWhole(db, ids, "round \(round)")
        }
        try assertWhole(try SQLiteConnection(path: path, mode: .readOnly), ids)
    }

    private func assertWhole(_ db: SQLiteConnection, _ ids: [String], _ message: String = "",
                             file: StaticString = #filePath, line: UInt = #line) throws {
        XCTAssertEqual(try db.queryOne("PRAGMA integrity_check")?.string(0), "ok", message, file: file, line: line)
        XCTAssertEqual(try db.queryOne("SELECT COUNT(*) FROM t")?.int(0), Int64(ids.count), message, file: file, line: line)
        let stored = Set(try db.query("SELECT id FROM t").map { $0.string(0) })
        XCTAssertEqual(stored, Set(ids), message, file: file, line: line)
    }
}
