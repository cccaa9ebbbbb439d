import Foundation
import SQLiteKit
import XCTest

/// SQLite's memory comes from malloc through an allocator of our own that keeps blocks of
/// 1–8 KiB per thread (see `kidledger_install_allocator`). It must be in force and
/// invisible: every value written comes back byte for byte, whatever its size, from any
/// thread, with blocks taken on one thread and given back on another.
final class AllocatorTests: XCTestCase {
    /// Page splits (random keys in an index, rows of many sizes) take and give back
    /// mid-size scratch blocks: the writing thread then keeps some. Values of every size,
    /// and a result grown by reallocation past the kept sizes (`group_concat`), read back
    /// exactly.
    func testMidSizeBlocksAreKeptAndEveryValueReadsBackExactly() throws {
        XCTAssertTrue(SQLiteConnection.applyProcessSettings(), "the process settings are in force")
        let path = temporaryDatabasePath("allocator")
        let db = try SQLiteConnection(path: path)
        try db.execute("PRAGMA page_size = 2048; VACUUM")
        try db.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, body BLOB NOT NULL)")
        var rng = SystemRandomNumberGenerator()
        var rows: [(String, [UInt8])] = []
        // Sizes around the kept range's edges (1,024 and 8,192 with the header), and random.
        var sizes = [0, 1, 1000, 1008, 1009, 1024, 1025, 2032, 2048, 4096, 8160, 8176, 8177, 8192, 9000, 20000]
        for _ in 0..<400 { sizes.append(Int.random(in: 0...12_000, using: &rng)) }
        try db.transaction {
            for size in sizes {
                let id = UUID().uuidString
                let body = (0..<size).map { _ in UInt8.random(in: 0...255, using: &rng) }
                try db.run("INSERT INTO t (id, body) VALUES (?, ?)", [.text(id), .blob(body)])
                rows.append((id, body))
            }
        }
        XCTAssertGreaterThan(SQLiteConnection.allocatorBlocksKeptHere, 0, "page splits left mid-size blocks kept on this thread")
        for (id, body) in rows {
            XCTAssertEqual(try db.queryOne("SELECT body FROM t WHERE id = ?", [.text(id)])?.blob(0), body)
        }
        let joined = try db.queryOne("SELECT group_concat(id, ',') FROM (SELECT id FROM t ORDER BY n)")?.string(0)
        XCTAssertEqual(joined, rows.map(\.0).joined(separator: ","))
        let total = try db.queryOne("SELECT sum(length(body)) FROM t")?.int(0)
        XCTAssertEqual(total, Int64(sizes.reduce(0, +)))
    }

    /// Four threads write and read at once, each on its own connection, and the connections
    /// change threads halfway (so blocks go back to another thread's lists than the one
    /// that took them); threads that end give their kept blocks back. Everything reads back.
    func testBlocksCrossThreadsAndEveryRowStaysWhole() throws {
        let path = temporaryDatabasePath("allocator-threads")
        let setup = try SQLiteConnection(path: path)
        try setup.execute("PRAGMA page_size = 2048; VACUUM")
        try setup.execute("CREATE TABLE t (n INTEGER PRIMARY KEY, worker INTEGER NOT NULL, id TEXT NOT NULL UNIQUE, body BLOB NOT NULL)")
        let workers = 4
        let connections = try (0..<workers).map { _ in try SQLiteConnection(path: path) }
        let failures = Failures()
        @Sendable func work(_ w: Int, _ handed: Handed, round: Int) {
            let db = handed.db
            do {
                var written: [(String, [UInt8])] = []
                for _ in 0..<60 {
                    let id = UUID().uuidString
                    let size = Int.random(in: 500...9_000)
                    let body = [UInt8](repeating: UInt8(truncatingIfNeeded: size), count: size)
                    try db.transaction {
                        try db.run("INSERT INTO t (worker, id, body) VALUES (?, ?, ?)", [.int(w), .text(id), .blob(body)])
                    }
                    written.append((id, body))
                }
                for (id, body) in written where try db.queryOne("SELECT body FROM t WHERE id = ?", [.text(id)])?.blob(0) != body {
                    failures.add("worker \(w), round \(round): row \(id) differs")
                }
            } catch {
                failures.add("worker \(w), round \(round): \(error)")
            }
        }
        for round in 0..<2 {
            let group = DispatchGroup()
            for w in 0..<workers {
                // Round 1 hands each connection to the next worker's thread.
                let db = Handed(db: connections[(w + round) % workers])
                group.enter()
                let thread = Thread { work(w, db, round: round); group.leave() }
                thread.start()
            }
            XCTAssertEqual(group.wait(timeout: .now() + 120), .success)
        }
        XCTAssertEqual(failures.all, [])
        XCTAssertEqual(try setup.queryOne("SELECT count(*) FROM t")?.int(0), Int64(workers * 2 * 60))
        XCTAssertEqual(try setup.queryOne("PRAGMA integrity_check")?.string(0), "ok")
    }
}

/// A connection handed to one thread at a time (the test waits between rounds).
private struct Handed: @unchecked Sendable {
    let db: SQLiteConnection
}
