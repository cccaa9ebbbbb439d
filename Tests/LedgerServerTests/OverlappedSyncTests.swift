import Foundation
import LedgerModel
import SQLiteKit
import SQLiteServerKit
@testable import LedgerServer
import Synchronization
import XCTest

/// Overlapped syncs (`WriteQueue.Durability.overlapped`, the server's default over SQLite):
/// COMMIT leaves the WAL's sync to the syncing thread while the writer runs the next jobs.
/// Nothing is answered before the sync that makes it durable — neither the write's own
/// answer nor an answer built from a read that saw the commit — and SQLite still syncs
/// what it must (checkpoints, a new log's header) itself.
final class OverlappedSyncTests: XCTestCase {
    /// A sync that can be held: while closed, every sync waits at `pass()` until opened.
    private final class Hold: @unchecked Sendable {
        private let lock = NSCondition()
        private var closed = false
        private var waiting = 0
        private(set) var passed = 0

        func close() { lock.lock(); closed = true; lock.unlock() }
        func open() { lock.lock(); closed = false; lock.broadcast(); lock.unlock() }

        /// Called by the sync.
        func pass() {
            lock.lock()
            waiting += 1
            lock.broadcast()
            while closed { lock.wait() }
            waiting -= 1
            passed += 1
            lock.unlock()
        }

        /// Waits until a sync is held (up to `seconds`); whether one is.
        func waitForHeldSync(_ seconds: Double = 10) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            lock.lock()
            defer { lock.unlock() }
            while waiting == 0 { if !lock.wait(until: deadline) { return false } }
            return true
        }
    }

    /// Something that happened on another thread, with a deadline to wait for it.
    private final class Flag: @unchecked Sendable {
        private let sem = DispatchSemaphore(value: 0)
        private let state = Mutex(false)
        func set() { state.withLock { $0 = true }; sem.signal() }
        var isSet: Bool { state.withLock { $0 } }
        func wait(_ seconds: Double = 10) -> Bool { sem.wait(timeout: .now() + seconds) == .success }
    }

    func testCommitSyncsAreDeferredWhileCheckpointsAndANewLogsHeaderAreSynced() throws {
        try withTemporaryDatabase("defer") { path in
            let db = try SQLiteConnection.coalescingWALWriter(path: path)
            try db.execute("CREATE TABLE t (v INTEGER NOT NULL)")
            let wal = try db.deferWALCommitSyncs()
            XCTAssertEqual(wal.path, path + "-wal")
            let start = try XCTUnwrap(db.walSyncCounts)
            XCTAssertEqual(start.deferred, 0)

            for i in 0..<5 { try db.run("INSERT INTO t VALUES (?)", [.int(i)]) }
            var counts = try XCTUnwrap(db.walSyncCounts)
            XCTAssertEqual(counts.deferred, 5, "each COMMIT's sync was left to the caller")
            XCTAssertEqual(counts.synced, start.synced, "and none was made")
            // The frames are in the file at once: another connection reads them.
            let reader = try SQLiteConnection(path: path, mode: .readOnly)
            XCTAssertEqual(try reader.queryOne("SELECT count(*) FROM t")?.int(0), 5)
            try wal.sync()

            // A checkpoint makes the log durable before it copies it into the database.
            try db.execute("PRAGMA wal_checkpoint(RESTART)")
            counts = try XCTUnwrap(db.walSyncCounts)
            XCTAssertGreaterThan(counts.synced, start.synced, "the checkpoint synced the log itself")
            XCTAssertEqual(counts.deferred, 5)

            // The next commit starts the log over: SQLite syncs its new header, and defers the commit's sync.
            let beforeRestart = counts.synced
            try db.run("INSERT INTO t VALUES (5)")
            counts = try XCTUnwrap(db.walSyncCounts)
            XCTAssertEqual(counts.synced, beforeRestart + 1, "the new log's header was synced")
            XCTAssertEqual(counts.deferred, 6)
            XCTAssertEqual(try reader.queryOne("SELECT count(*) FROM t")?.int(0), 6)
        }
    }

    func testOnlyACoalescingWriterDefersItsSyncs() throws {
        try withTemporaryDatabase("defer-plain") { path in
            let db = try SQLiteConnection(path: path)
            try db.execute("CREATE TABLE t (v INTEGER)")
            XCTAssertThrowsError(try db.deferWALCommitSyncs())
            XCTAssertNil(db.walSyncCounts)
        }
    }

    /// A job is answered only after the sync that follows its COMMIT; while that sync runs,
    /// the writer goes on with the next job, whose COMMIT waits for the sync to end.
    func testJobsAreAnsweredAfterTheirSyncWhileTheNextJobsRun() throws {
        try withTemporaryDatabase("overlap") { path in
            let db = try SQLiteConnection.coalescingWALWriter(path: path)
            try db.execute("CREATE TABLE t (v INTEGER NOT NULL)")
            let wal = try db.deferWALCommitSyncs()
            let hold = Hold()
            let gate = DurabilityGate()
            let commits = Mutex(0)
            let writer = WriteQueue(connection: db, durability: .overlapped(sync: { hold.pass(); try wal.sync() }, gate: gate),
                                    afterEveryCommit: { _ in commits.withLock { $0 += 1 } }) { _ in }
            defer { hold.open(); writer.stop() }

            hold.close()
            let firstAnswered = Flag(), secondRan = Flag(), secondAnswered = Flag()
            func job(_ v: Int, ran: Flag? = nil, answered: Flag) -> WriteQueue.Job {
                WriteQueue.Job(work: { db in
                    try db.run("INSERT INTO t VALUES (?)", [.int(v)])
                    ran?.set()
                    return WriteQueue.WriteEffects()
                }, completion: { result in
                    if case .success = result { answered.set() }
                })
            }
            writer.submit(job(1, answered: firstAnswered))
            XCTAssertTrue(hold.waitForHeldSync(), "the first commit's sync started")
            XCTAssertEqual(gate.counts.committed, 1)
            XCTAssertEqual(gate.counts.durable, 0)
            // Committed, visible, not answered.
            let reader = try SQLiteConnection(path: path, mode: .readOnly)
            XCTAssertEqual(try reader.queryOne("SELECT count(*) FROM t")?.int(0), 1)
            XCTAssertFalse(firstAnswered.wait(0.2), "answered before its sync ended")
            XCTAssertEqual(commits.withLock { $0 }, 0, "afterEveryCommit ran before the sync")

            writer.submit(job(2, ran: secondRan, answered: secondAnswered))
            XCTAssertTrue(secondRan.wait(), "the next job ran while the sync was held")
            XCTAssertEqual(gate.counts.committed, 1, "its COMMIT waits for the sync in flight")
            XCTAssertEqual(try reader.queryOne("SELECT count(*) FROM t")?.int(0), 1)
            XCTAssertFalse(firstAnswered.isSet)

            hold.open()
            XCTAssertTrue(firstAnswered.wait())
            XCTAssertTrue(secondAnswered.wait())
            XCTAssertEqual(gate.counts.committed, 2)
            XCTAssertEqual(gate.counts.durable, 2)
            XCTAssertEqual(hold.passed, 2)
            XCTAssertEqual(commits.withLock { $0 }, 2)
            XCTAssertEqual(try reader.queryOne("SELECT count(*) FROM t")?.int(0), 2)
        }
    }

    func testTheGateRunsWhatWaitsInOrderOfDurability() {
        let gate = DurabilityGate()
        let ran = Mutex<[Int]>([])
        XCTAssertEqual(gate.beginCommit(), 1)
        XCTAssertEqual(gate.beginCommit(), 2)
        XCTAssertEqual(gate.horizon, 2)
        gate.whenDurable(2) { ran.withLock { $0.append(2) } }
        gate.whenDurable(1) { ran.withLock { $0.append(1) } }
        gate.whenDurable(0) { ran.withLock { $0.append(0) } }
        XCTAssertEqual(ran.withLock { $0 }, [0], "commit 0 (none) is durable")
        gate.markDurable(1)
        XCTAssertEqual(ran.withLock { $0 }, [0, 1])
        XCTAssertFalse(gate.isDurable(2))
        gate.markDurable(2)
        XCTAssertEqual(ran.withLock { $0 }, [0, 1, 2])
        XCTAssertTrue(gate.isDurable(2))
        gate.whenDurable(2) { ran.withLock { $0.append(3) } }
        XCTAssertEqual(ran.withLock { $0 }, [0, 1, 2, 3])
    }

    /// Over HTTP: while a commit's sync is held, its POST is not answered, a read that sees
    /// the commit is not answered either (nor kept in the read cache), and an answer cached
    /// before the commit is still served. Once the sync ends, all are answered.
    func testAnAnswerThatReadACommitWaitsForItsSync() throws {
        try TestServer.requireSQLite("overlapped syncs are SQLite's")
        let hold = Hold()
        let s = try TestServer { $0.beforeCommitSync = { hold.pass() } }
        defer { hold.open(); s.stop() }
        XCTAssertTrue(s.app.configuration.overlapsCommitSync, "on by default")
        let (_, token) = s.signup("mum")
        let h = s.household(token)
        let c = s.child(token, household: h)
        // Cached: the child with its balance before the write.
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(c)", token: token).json["balanceCents"]?.intValue, 0)

        hold.close()
        let tx = UUID().uuidString.lowercased()
        let posted = Mutex<TestServer.Reply?>(nil), read = Mutex<TestServer.Reply?>(nil)
        let postDone = Flag(), readDone = Flag()
        Thread.detachNewThread {
            posted.withLock { $0 = s.call("POST", "/v1/households/\(h)/children/\(c)/transactions", token: token,
                                           json: .obj(["id": .string(tx), "amountCents": 250])) }
            postDone.set()
        }
        XCTAssertTrue(hold.waitForHeldSync(), "the POST's commit is being synced")
        Thread.detachNewThread {
            read.withLock { $0 = s.call("GET", "/v1/households/\(h)/transactions/\(tx)", token: token) }
            readDone.set()
        }
        XCTAssertFalse(readDone.wait(0.5), "a read of the commit was answered before its sync")
        XCTAssertFalse(postDone.isSet, "the POST was answered before its sync")
        // The answer cached before the commit still holds: nothing durable has changed.
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(c)", token: token, timeout: 5).json["balanceCents"]?.intValue, 0)

        hold.open()
        XCTAssertTrue(postDone.wait())
        XCTAssertTrue(readDone.wait())
        XCTAssertEqual(posted.withLock { $0 }?.status, 201)
        XCTAssertEqual(read.withLock { $0 }?.status, 200)
        XCTAssertEqual(read.withLock { $0 }?.json["amountCents"]?.intValue, 250)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(c)", token: token).json["balanceCents"]?.intValue, 250)
    }

    /// Off, COMMIT syncs and nothing waits for a sync of its own.
    func testSyncsInsideCommitWhenTurnedOff() throws {
        try TestServer.requireSQLite("overlapped syncs are SQLite's")
        let syncs = Mutex(0)
        let s = try TestServer { c in
            c.overlapsCommitSync = false
            c.beforeCommitSync = { syncs.withLock { $0 += 1 } }
        }
        defer { s.stop() }
        XCTAssertNil(s.app.services.durability)
        let (_, token) = s.signup("dad")
        let h = s.household(token)
        let c = s.child(token, household: h)
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(c)/transactions", token: token,
                              json: .obj(["amountCents": 7])).status, 201)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(c)", token: token).json["balanceCents"]?.intValue, 7)
        XCTAssertEqual(syncs.withLock { $0 }, 0, "no overlapped sync ran")
        XCTAssertEqual(try s.app.sqliteWriter.sync { db in db.walSyncCounts?.deferred }, 0)
    }
}
