import Foundation
@testable import LedgerServer
@testable import LedgerStorageSQLite
import SQLiteKit
import XCTest

/// Read connections map the database file as configured (`--read-mmap-mb`), and read what
/// the writer committed either way.
final class ReadPoolTests: XCTestCase {
    func testReadConnectionsMapTheFileAsConfigured() throws {
        try withTemporaryDatabase("readpool") { path in
            let writer = try SQLiteConnection(path: path)
            try writer.execute("CREATE TABLE t (x INTEGER NOT NULL)")
            XCTAssertEqual(LedgerAppConfiguration(dataDirectory: "data").readerMmapBytes, 2 << 30)
            for (asked, expected) in [(64 << 20, Int64(64 << 20)), (0, Int64(0))] {
                let pool = ReadPool(path: path, mmapBytes: asked)
                for n in 1...3 {
                    try writer.run("INSERT INTO t (x) VALUES (?)", [.integer(Int64(n))])
                    try pool.with { db in
                        XCTAssertEqual(try db.queryOne("PRAGMA mmap_size")?.int(0), expected)
                        XCTAssertEqual(try db.queryOne("SELECT COUNT(*) FROM t")?.int(0), Int64(n + (asked == 0 ? 3 : 0)))
                    }
                }
            }
            // The default asks for more than SQLite maps at most: SQLite's own cap applies.
            try ReadPool(path: path, mmapBytes: 2 << 30).with { db in
                let mapped = try db.queryOne("PRAGMA mmap_size")?.int(0) ?? 0
                XCTAssertGreaterThan(mapped, 0)
                XCTAssertLessThanOrEqual(mapped, 2 << 30)
            }
        }
    }
}

/// The writer's page cache is as configured (`--writer-cache-mb`, default 32 MiB).
final class WriterCacheTests: XCTestCase {
    private func writer(_ configuration: LedgerAppConfiguration) throws -> SQLiteConnection {
        try SQLiteLedgerStorage.openWriter(path: configuration.databasePath, cacheBytes: configuration.writerCacheBytes)
    }

    func testTheWriterCacheIsAsConfigured() throws {
        try withTemporaryDataDirectory("writer-cache") { defaults in
            var configuration = defaults
            XCTAssertEqual(configuration.writerCacheBytes, 32 << 20)
            XCTAssertEqual(try writer(configuration).queryOne("PRAGMA cache_size")?.int(0), -32_768)
            configuration.writerCacheBytes = 1 << 20
            XCTAssertEqual(try writer(configuration).queryOne("PRAGMA cache_size")?.int(0), -1_024)
        }
    }
}
