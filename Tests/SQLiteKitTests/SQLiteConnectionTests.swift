import Foundation
import XCTest
@testable import SQLiteKit
import SQLiteServerKit

final class SQLiteConnectionTests: XCTestCase {
    func tempPath() -> String { temporaryDatabasePath("sqlitekit") }

    func testBindAndReadTypedValues() throws {
        let db = try SQLiteConnection(path: tempPath())
        try db.execute("CREATE TABLE t (i INTEGER, s TEXT, b BLOB, n TEXT)")
        try db.run("INSERT INTO t VALUES (?, ?, ?, ?)", [.integer(Int64.min), .text("x'); DROP TABLE t;--"), .blob([0, 1, 2]), .null])
        let row = try XCTUnwrap(db.queryOne("SELECT i, s, b, n FROM t"))
        XCTAssertEqual(row.int(0), Int64.min)
        XCTAssertEqual(row.string(1), "x'); DROP TABLE t;--")
        XCTAssertEqual(row.blob(2), [0, 1, 2])
        XCTAssertNil(row.optionalString(3))
    }

    /// A scan reads columns in place: the same values as a built row, for every type.
    func testColumnsReadInPlaceMatchTheRow() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try db.execute("CREATE TABLE t (v)")
        let values: [SQLiteValue] = [.integer(-7), .integer(Int64.max), .text("é🙂"), .text(""), .blob([0, 255, 3]), .blob([]), .real(1.5), .null]
        for v in values { try db.run("INSERT INTO t VALUES (?)", [v]) }
        let s = try db.prepare("SELECT v, rowid FROM t ORDER BY rowid")
        try s.bind([])
        var seen: [SQLiteValue] = []
        while try s.step() {
            XCTAssertEqual(s.int64(1), Int64(seen.count + 1))
            switch s.columnType(0) {
            case .integer: seen.append(.integer(s.int64(0)))
            case .text: seen.append(.text(s.withColumnBytes(0) { String(decoding: $0, as: UTF8.self) }))
            case .blob: seen.append(.blob(s.withColumnBytes(0) { Array($0) }))
            case .real: seen.append(s.row().values[0])
            case .null: seen.append(.null)
            }
        }
        try s.finish()
        XCTAssertEqual(seen, values)
    }

    /// Text and blob parameters are bound from the statement's own buffer, reused and grown
    /// from one bind to the next: every bind must see its own values, whatever was bound
    /// before, and "" and an empty blob stay values (not NULL).
    func testRebindingOneStatementKeepsEachBindsValues() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try db.execute("CREATE TABLE t (k INTEGER, s TEXT, b BLOB, u TEXT)")
        let long = String(repeating: "é🙂x", count: 300)  // larger than any buffer before it
        let rows: [(Int64, String, [UInt8], String?)] = [
            (1, "short", [1, 2], "ü"), (2, long, Array(repeating: 7, count: 5000), long), (3, "", [], nil), (4, "after", [9], ""),
        ]
        for (k, s, b, u) in rows {
            try db.run("INSERT INTO t VALUES (?, ?, ?, ?)", [.integer(k), .text(s), .blob(b), .optionalText(u)])
        }
        for (k, s, b, u) in rows {
            let r = try XCTUnwrap(db.queryOne("SELECT s, b, u, s IS NULL, b IS NULL FROM t WHERE k = ? AND s = ?", [.integer(k), .text(s)]))
            XCTAssertEqual(r.string(0), s)
            XCTAssertEqual(r.blob(1), b)
            XCTAssertEqual(r.optionalString(2), u)
            XCTAssertEqual(r.int(3), 0)
            XCTAssertEqual(r.int(4), 0)
        }
        // A failed bind (wrong count) leaves the statement usable with the next one.
        XCTAssertThrowsError(try db.queryOne("SELECT s FROM t WHERE k = ? AND s = ?", [.integer(2)]))
        XCTAssertEqual(try db.queryOne("SELECT s FROM t WHERE k = ? AND s = ?", [.integer(2), .text(long)])?.string(0), long)
    }

    /// Parameters given one by one (`bind { … }`): values that outgrow the statement's
    /// buffer go to chunks of their own within one bind (earlier parameters of the same
    /// bind must keep their bytes), and the next bind grows the buffer. Sizes vary from
    /// bind to bind; every row reads back as bound.
    func testBindingOneByOneKeepsEveryValueAcrossGrowth() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try db.execute("CREATE TABLE t (k INTEGER, a TEXT, b BLOB, c TEXT, d TEXT)")
        var rng = SystemRandomNumberGenerator()
        var rows: [(Int64, String, [UInt8], String?, String)] = []
        for k in 0..<300 {
            let size = [0, 1, 17, 255, 256, 257, 4_000, 70_000][Int.random(in: 0..<8, using: &rng)]
            let a = String(repeating: "é", count: size / 2) + "\(k)"
            let b = (0..<size).map { UInt8(truncatingIfNeeded: $0 &+ k) }
            let c: String? = k % 3 == 0 ? nil : String(repeating: "🙂", count: size % 97)
            rows.append((Int64(k), a, b, c, "last \(k)"))
        }
        for (k, a, b, c, d) in rows {
            try db.run("INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5)") { p in
                try p.integer(k)
                try p.text(a)
                try b.withUnsafeBytes { try p.blob($0) }
                try p.text(c)
                try p.value(.text(d))
            }
        }
        let read = try db.query("SELECT k, a, b, c, d, b IS NULL FROM t ORDER BY k")
        XCTAssertEqual(read.count, rows.count)
        for (r, (k, a, b, c, d)) in zip(read, rows) {
            XCTAssertEqual(r.int(0), k)
            XCTAssertEqual(r.string(1), a)
            XCTAssertEqual(r.blob(2), b)
            XCTAssertEqual(r.optionalString(3), c)
            XCTAssertEqual(r.string(4), d)
            XCTAssertEqual(r.int(5), 0, "an empty blob is a value, not NULL")
        }
    }

    /// Too few or too many parameters, or a body that throws, leave nothing bound and the
    /// statement usable.
    func testBindingOneByOneRefusesAWrongCount() throws {
        let db = try SQLiteConnection(path: ":memory:")
        try db.execute("CREATE TABLE t (a TEXT, b TEXT)")
        let sql = "INSERT INTO t VALUES (?, ?)"
        XCTAssertThrowsError(try db.run(sql) { try $0.text("only one") }) { error in
            XCTAssertEqual((error as? SQLiteError)?.message, "statement takes 2 parameters, got 1")
        }
        XCTAssertThrowsError(try db.run(sql) { p in try p.text("1"); try p.text("2"); try p.text("3") })
        struct Stop: Error {}
        XCTAssertThrowsError(try db.run(sql) { p in try p.text("x"); throw Stop() }) { XCTAssertTrue($0 is Stop) }
        XCTAssertEqual(try db.queryOne("SELECT COUNT(*) FROM t")?.int(0), 0)
        try db.run(sql) { p in try p.text("a"); try p.null() }
        XCTAssertEqual(try db.queryOne("SELECT a, b IS NULL FROM t")?.string(0), "a")
        XCTAssertEqual(try db.queryOne("SELECT b IS NULL FROM t")?.int(0), 1)
    }

    func testTransactionRollsBackOnError() throws {
        let db = try SQLiteConnection(path: tempPath())
        try db.execute("CREATE TABLE t (i INTEGER PRIMARY KEY)")
        struct Boom: Error {}
        XCTAssertThrowsError(try db.transaction {
            try db.run("INSERT INTO t VALUES (1)")
            throw Boom()
        })
        XCTAssertEqual(try db.queryOne("SELECT COUNT(*) FROM t")?.int(0), 0)
        try db.transaction {
            try db.run("INSERT INTO t VALUES (1)")
            try? db.transaction { try db.run("INSERT INTO t VALUES (1)") } // nested savepoint fails alone
        }
        XCTAssertEqual(try db.queryOne("SELECT COUNT(*) FROM t")?.int(0), 1)
    }

    func testWrongParameterCountIsAnError() throws {
        let db = try SQLiteConnection(path: ":memory:")
        XCTAssertThrowsError(try db.query("SELECT ?", []))
    }

    func testMigrationsAreForwardOnlyAndIdempotent() throws {
        let path = tempPath()
        let db = try SQLiteConnection(path: path)
        let ms = [Migration(version: 1, sql: "CREATE TABLE a (x)"), Migration(version: 2, sql: "CREATE TABLE b (y)")]
        XCTAssertEqual(try Migrator.migrate(db, ms), [1, 2])
        XCTAssertEqual(try Migrator.migrate(db, ms), [])
        XCTAssertEqual(try Migrator.version(db), 2)
        XCTAssertThrowsError(try Migrator.migrate(db, [ms[0]]))
    }

    /// Two processes opening a new file at once (an app and its extension) apply each step once.
    func testConcurrentMigrationsOnOneFileApplyEachStepOnce() throws {
        let steps = [Migration(version: 1, sql: "CREATE TABLE a (x INTEGER)"), Migration(version: 2, sql: "CREATE TABLE b (y INTEGER)")]
        for _ in 0..<30 {
            let path = temporaryDatabasePath()
            let failures = Failures()
            let group = DispatchGroup()
            for _ in 0..<2 {
                DispatchQueue.global().async(group: group) {
                    do { try Migrator.migrate(try SQLiteConnection(path: path), steps) } catch { failures.add("\(error)") }
                }
            }
            group.wait()
            XCTAssertEqual(failures.all, [])
            XCTAssertEqual(try Migrator.version(try SQLiteConnection(path: path)), 2)
        }
    }

    func testReadOnlyConnectionSeesCommittedData() throws {
        let path = tempPath()
        let w = try SQLiteConnection(path: path)
        try w.execute("CREATE TABLE t (i INTEGER)")
        try w.run("INSERT INTO t VALUES (42)")
        let r = try SQLiteConnection(path: path, mode: .readOnly)
        XCTAssertEqual(try r.queryOne("SELECT i FROM t")?.int(0), 42)
        XCTAssertThrowsError(try r.run("INSERT INTO t VALUES (1)"))
    }

    func testBackupIsAConsistentCopy() throws {
        let path = tempPath()
        let db = try SQLiteConnection(path: path)
        try db.execute("CREATE TABLE t (i INTEGER)")
        for i in 0..<100 { try db.run("INSERT INTO t VALUES (?)", [.int(i)]) }
        let copy = path + ".bak"
        try db.backup(to: copy)
        XCTAssertEqual(try SQLiteConnection(path: copy, mode: .readOnly).queryOne("SELECT COUNT(*) FROM t")?.int(0), 100)
    }

    func testSyncDatabaseFileNeedsAFile() throws {
        let path = tempPath()
        let db = try SQLiteConnection(path: path)
        try db.execute("CREATE TABLE t (i INTEGER)")
        // A second connection syncs the file the first one wrote, under its own handle.
        try SQLiteConnection(path: path).syncDatabaseFile()
        try db.syncDatabaseFile()
        XCTAssertThrowsError(try SQLiteConnection(path: ":memory:").syncDatabaseFile())
    }
}

final class SQLiteRowTests: XCTestCase {
    func testRealsOutsideInt64AreClampedNotTrapped() throws {
        let db = try SQLiteConnection(path: ":memory:")
        let row = try XCTUnwrap(db.queryOne("SELECT 9223372036854775807 + 1, -9223372036854775808 - 1, 2.9"))
        XCTAssertEqual(row.int(0), Int64.max)
        XCTAssertEqual(row.int(1), Int64.min)
        XCTAssertEqual(row.int(2), 2)
    }
}

/// Errors collected from several threads.
final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func add(_ s: String) { lock.lock(); items.append(s); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return items }
}
