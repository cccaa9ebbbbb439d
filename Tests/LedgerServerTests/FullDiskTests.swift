import Foundation
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
@testable import LedgerStorageSQLite
import SQLiteKit
import XCTest

/// A full disk (simulated with `max_page_count` on the writer's connection): writes answer
/// 507 with Retry-After and store nothing, /readyz is not ready, and both come back without
/// a restart once there is room.
final class FullDiskTests: XCTestCase {
    func testFullDiskIs507NotReadyAndRecovers() throws {
        try TestServer.requireSQLite("SQLite's page limit stands in for a full disk")
        let s = try TestServer()
        defer { s.stop() }
        let (acct, t) = s.signup("mum")
        let h = s.household(t)
        let c = s.child(t, household: h)
        let path = s.app.configuration.databasePath
        // Room another connection can give back later: a table of filler pages.
        let other = try SQLiteConnection(path: path)
        try other.execute("CREATE TABLE filler (b BLOB); INSERT INTO filler VALUES (zeroblob(400000))")
        _ = try s.app.sqliteWriter.sync { db in
            let pages = try db.queryOne("PRAGMA page_count")!.int(0)
            try db.execute("PRAGMA max_page_count = \(pages)")
        }

        let note = String(repeating: "n", count: 500)
        var stored: Int64 = 0
        var full: TestServer.Reply?
        for i in 1...400 {
            let r = s.call("POST", "/v1/households/\(h)/children/\(c)/transactions", token: t,
                           json: .obj(["amountCents": .int(Int64(i)), "note": .string(note)]))
            if r.status == 201 { stored += Int64(i); continue }
            full = r
            break
        }
        guard let full else { return XCTFail("the disk never filled") }
        XCTAssertEqual(full.status, 507, String(decoding: full.body, as: UTF8.self))
        XCTAssertEqual(full.code, "insufficient_storage")
        XCTAssertNotNil(full.header("Retry-After"))
        XCTAssertEqual(s.call("GET", "/readyz").status, 503)
        XCTAssertTrue(s.app.sqliteWriter.isOutOfSpace)

        // A batch that cannot be stored is refused whole.
        let batch = (0..<20).map { _ in SyncRecords.transaction(SyncRecords.newId(), child: c, amount: 1, note: note) }
        let pushed = s.push(t, h, children: [SyncRecords.child(SyncRecords.newId(), name: "Bo", modifiedBy: acct)], transactions: batch)
        XCTAssertEqual(pushed.status, 507)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children", token: t).json["items"]?.arrayValue?.count, 1)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(c)", token: t).json["balanceCents"]?.intValue, stored)
        // A write that fits in pages already there goes through, yet the disk is still full.
        XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)/children/\(c)", token: t, json: .obj(["name": "Ava"])).status, 200)
        XCTAssertEqual(s.call("GET", "/readyz").status, 503)
        // Reads go on.
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/transactions?limit=1", token: t).status, 200)

        // Room comes back (another process frees pages): ready again without a client's write.
        try other.execute("DROP TABLE filler")
        let deadline = Date().addingTimeInterval(10)
        while s.call("GET", "/readyz").status != 200, Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        XCTAssertEqual(s.call("GET", "/readyz").status, 200)
        let after = s.call("POST", "/v1/households/\(h)/children/\(c)/transactions", token: t, json: .obj(["amountCents": 1]))
        XCTAssertEqual(after.status, 201)
        XCTAssertEqual(after.json["balanceCents"]?.intValue, stored + 1)
        let check = try AdminCommands.check(s.app.configuration)
        XCTAssertEqual(check.problems, [])
    }

    /// The same on a real full filesystem (a 3 MiB tmpfs, where the WAL's writes fail with
    /// ENOSPC): skipped where this process may not mount one.
    func testFullFilesystemLosesNothingAndRecovers() throws {
        try TestServer.requireSQLite("the database file on a full filesystem")
        let mountPoint = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-tmpfs-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: mountPoint) }
        guard shell("/bin/mount", ["-t", "tmpfs", "-o", "size=3m", "tmpfs", mountPoint]) == 0 else {
            throw XCTSkip("cannot mount a tmpfs here")
        }
        // Lazily: connections the stopped server leaves open must not keep it mounted.
        defer { _ = shell("/bin/umount", ["-l", mountPoint]) }
        let s = try TestServer { $0.dataDirectory = mountPoint + "/data" }
        defer { s.stop() }
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let c = s.child(t, household: h)
        // What is freed later must hold the log's pages once the checkpoint thread moves
        // them into the database file (it grows that file first), or the disk fills again
        // (writes fill the log faster than the thread, copying once a second, empties it):
        // half the filesystem, so the log never holds more than the filler gives back.
        let filler = mountPoint + "/filler"
        XCTAssertTrue(FileManager.default.createFile(atPath: filler, contents: Data(count: 1536 * 1024)))

        let note = String(repeating: "n", count: 500)
        var saved = 0
        var refused: TestServer.Reply?
        for _ in 0..<50 {
            let batch = (0..<400).map { _ in SyncRecords.transaction(SyncRecords.newId(), child: c, amount: 1, note: note) }
            let r = s.push(t, h, transactions: batch)
            if r.status == 200 { saved += 400; continue }
            refused = r
            break
        }
        XCTAssertGreaterThan(saved, 0, "some batches fit before the disk is full")
        XCTAssertEqual(refused?.status, 507)
        XCTAssertEqual(refused?.code, "insufficient_storage")
        XCTAssertNotNil(refused?.header("Retry-After"))
        XCTAssertEqual(s.call("GET", "/readyz").status, 503)

        try FileManager.default.removeItem(atPath: filler)
        let deadline = Date().addingTimeInterval(10)
        while s.call("GET", "/readyz").status != 200, Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        let ready = s.call("GET", "/readyz")
        XCTAssertEqual(ready.status, 200, String(decoding: ready.body, as: UTF8.self))
        // The checkpoint thread copying the log into the database file takes freed space
        // too, so a write right after readiness may still be refused (507, nothing saved);
        // the same request again soon goes through.
        let key = SyncRecords.newId()
        var after = s.call("POST", "/v1/households/\(h)/children/\(c)/transactions", token: t, json: .obj(["amountCents": 1]),
                           headers: ["Idempotency-Key": key])
        let retryUntil = Date().addingTimeInterval(10)
        while after.status == 507, Date() < retryUntil {
            Thread.sleep(forTimeInterval: 0.2)
            after = s.call("POST", "/v1/households/\(h)/children/\(c)/transactions", token: t, json: .obj(["amountCents": 1]),
                           headers: ["Idempotency-Key": key])
        }
        XCTAssertEqual(after.status, 201)
        XCTAssertEqual(after.json["balanceCents"]?.intValue, Int64(saved + 1), "every acknowledged write, nothing else")
        let check = try AdminCommands.check(s.app.configuration)
        XCTAssertEqual(check.problems, [])
        XCTAssertEqual(check.transactions, saved + 1)
    }

    private func shell(_ tool: String, _ arguments: [String]) -> Int32 {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        do { try p.run() } catch { return -1 }
        p.waitUntilExit()
        return p.terminationStatus
    }
}
