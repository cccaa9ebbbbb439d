import Foundation
import XCTest
import CSQLite
import SQLiteKit
@testable import SQLiteServerKit

/// The writer's coalescing WAL VFS must be invisible: what a commit wrote is in the file
/// for every other connection the moment COMMIT returns, rollbacks and cache spills inside
/// a transaction behave as with the default VFS, and the file is a valid database after.
final class CoalescingWALVFSTests: XCTestCase {
    func tempPath() -> String { temporaryDatabasePath("coalescing") }

    /// Registering the VFS initialises SQLite (`sqlite3_vfs_find`), after which SQLite
    /// refuses process settings: they must be in force once a writer is open, whatever
    /// opened first. Without memory statistics SQLite counts no bytes in use.
    func testMemoryStatisticsAreOffOnceTheWriterIsOpen() throws {
        let writer = try SQLiteConnection.coalescingWALWriter(path: tempPath())
        try writer.execute("CREATE TABLE t (x)")
        XCTAssertTrue(SQLiteConnection.applyProcessSettings())
        XCTAssertEqual(sqlite3_memory_used(), 0)
    }

    func testCommitsAreVisibleToOtherConnectionsAtOnce() throws {
        let path = tempPath()
        let writer = try SQLiteConnection.coalescingWALWriter(path: path)
        try writer.execute("PRAGMA wal_autocheckpoint = 0")
        try writer.execute("CREATE TABLE t (id TEXT PRIMARY KEY, n INTEGER NOT NULL, pad BLOB NOT NULL)")
        let reader = try SQLiteConnection(path: path, mode: .readOnly)
        let checkpointer = try SQLiteConnection(path: path)
        var expected = 0
        for round in 0..<300 {
            try writer.transaction {
                for i in 0..<(1 + round % 40) {
                    try writer.run("INSERT INTO t VALUES (?, ?, randomblob(?))",
                                   [.text(UUID().uuidString), .int(round), .int(100 + (round * 37 + i) % 3000)])
                    expected += 1
                }
            }
            // Another connection, through the default VFS, sees every row just committed.
            XCTAssertEqual(try reader.queryOne("SELECT COUNT(*) FROM t")?.int(0), Int64(expected))
            if round % 50 == 49 {
                _ = try checkpointer.queryOne("PRAGMA wal_checkpoint(PASSIVE)")
                _ = try writer.queryOne("PRAGMA wal_checkpoint(RESTART)")
            }
        }
        XCTAssertEqual(try reader.queryOne("PRAGMA integrity_check")?.string(0), "ok")
    }

    func testSpillsRewritesAndRollbacksInsideOneTransaction() throws {
        let path = tempPath()
        do {
            let db = try SQLiteConnection.coalescingWALWriter(path: path)
            // A tiny page cache makes SQLite write frames in the middle of the transaction,
            // read them back and rewrite them; 8 MB of rows outgrow the 4 MiB buffer.
            try db.execute("PRAGMA cache_size = 20")
            try db.execute("CREATE TABLE t (i INTEGER PRIMARY KEY, pad BLOB NOT NULL)")
            try db.transaction {
                for i in 0..<2_000 { try db.run("INSERT INTO t VALUES (?, zeroblob(2000))", [.int(i)]) }
                struct Undo: Error {}
                XCTAssertThrowsError(try db.transaction {
                    for i in 2_000..<4_000 { try db.run("INSERT INTO t VALUES (?, zeroblob(2000))", [.int(i)]) }
                    try db.run("UPDATE t SET pad = zeroblob(10) WHERE i < 1000")
                    throw Undo()
                })
                for i in 4_000..<6_000 { try db.run("INSERT INTO t VALUES (?, zeroblob(2000))", [.int(i)]) }
                try db.run("UPDATE t SET pad = zeroblob(5) WHERE i % 7 = 0")
            }
            try db.transaction {
                try db.run("DELETE FROM t WHERE i >= 5000")
                struct Undo: Error {}
                XCTAssertThrowsError(try db.transaction { () throws -> Void in throw Undo() })
            }
            XCTAssertEqual(try db.queryOne("SELECT COUNT(*), SUM(length(pad)) FROM t")?.int(0), 3_000)
        }
        // Reopened through the default VFS (the log is recovered from the file alone).
        let db = try SQLiteConnection(path: path)
        let row = try XCTUnwrap(db.queryOne("SELECT COUNT(*), SUM(length(pad)), MIN(i), MAX(i) FROM t"))
        XCTAssertEqual(row.int(0), 3_000)
        let kept: [Int] = Array(0..<2_000) + Array(4_000..<5_000)
        let fives: Int64 = Int64(kept.filter { $0 % 7 == 0 }.count)
        let bytes: Int64 = fives * 5 + (3_000 - fives) * 2_000
        XCTAssertEqual(row.int(1), bytes)
        XCTAssertEqual(row.int(2), 0)
        XCTAssertEqual(row.int(3), 4_999)
        XCTAssertEqual(try db.queryOne("PRAGMA integrity_check")?.string(0), "ok")
    }

    func testCommittedFramesSurviveWithoutAClose() throws {
        // The writer is never closed: the rows must already be in the WAL file on disk,
        // not in the process's buffer. A copy of the files is opened as another database.
        let path = tempPath()
        let writer = try SQLiteConnection.coalescingWALWriter(path: path)
        try writer.execute("PRAGMA wal_autocheckpoint = 0")
        try writer.execute("CREATE TABLE t (i INTEGER PRIMARY KEY, s TEXT NOT NULL)")
        for i in 0..<500 { try writer.run("INSERT INTO t VALUES (?, ?)", [.int(i), .text(String(repeating: "x", count: i))]) }
        let copy = tempPath()
        try FileManager.default.copyItem(atPath: path, toPath: copy)
        try FileManager.default.copyItem(atPath: path + "-wal", toPath: copy + "-wal")
        let db = try SQLiteConnection(path: copy)
        XCTAssertEqual(try db.queryOne("SELECT COUNT(*), SUM(length(s)) FROM t")?.int(0), 500)
        XCTAssertEqual(try db.queryOne("SELECT SUM(length(s)) FROM t")?.int(0), Int64((0..<500).reduce(0, +)))
        XCTAssertEqual(try db.queryOne("PRAGMA integrity_check")?.string(0), "ok")
        withExtendedLifetime(writer) {}
    }
}
