import Foundation
import SQLiteKit
import SQLiteServerKit
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStorageSQLite
import Synchronization
import XCTest

/// A failing job leaves nothing behind and takes no other job of its batch with it,
/// whether it failed before writing, after writing, or with an error SQLite raised.
final class WriteQueueTests: XCTestCase {
    private enum Kind: CaseIterable { case ok, refusesBeforeWriting, refusesAfterWriting, otherErrorAfterWriting, constraint }
    private struct Odd: Error {}
    private final class Answers: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [Int: Bool] = [:]
        func set(_ id: Int, _ ok: Bool) { lock.lock(); values[id] = ok; lock.unlock() }
        var all: [Int: Bool] { lock.lock(); defer { lock.unlock() }; return values }
    }

    /// A job whose completion only hands its outcome on is completed by the writer thread
    /// itself, after COMMIT (the row is there for another connection) and after the commit
    /// was reported; any other job's completion runs on the completion queue.
    func testAHandingOffJobIsCompletedByTheWriterOnceDurable() throws {
        try withTemporaryDatabase("wq-handoff") { path in
            let db = try SQLiteConnection.coalescingWALWriter(path: path)
            try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY)")
            nonisolated(unsafe) let reader = try SQLiteConnection(path: path, mode: .readOnly)
            let commits = Mutex(0)
            let writer = WriteQueue(connection: db) { _ in commits.withLock { $0 += 1 } }
            defer { writer.stop() }
            struct Seen { var workThread: UInt = 0, completionThread: UInt = 0, rows: Int64 = -1, commits = 0, ok = false }
            for handsOff in [true, false] {
                let seen = Mutex(Seen())
                let done = DispatchSemaphore(value: 0)
                writer.submit(WriteQueue.Job(work: { db in
                    seen.withLock { $0.workThread = UInt(pthread_self()) }
                    try db.run("INSERT INTO t DEFAULT VALUES")
                    return StorageCommit()
                }, completion: { result in
                    let ok = (try? result.get()) != nil
                    let rows: Int64 = (try? reader.queryOne("SELECT COUNT(*) FROM t"))??.int(0) ?? -1
                    let committed = commits.withLock { $0 }
                    seen.withLock { $0 = Seen(workThread: $0.workThread, completionThread: UInt(pthread_self()), rows: rows,
                                              commits: committed, ok: ok) }
                    done.signal()
                }, handsOff: handsOff))
                XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
                let s = seen.withLock { $0 }
                XCTAssertTrue(s.ok)
                XCTAssertEqual(s.workThread == s.completionThread, handsOff, "completed on the writer thread")
                XCTAssertEqual(s.rows, handsOff ? 1 : 2, "the row is durable and visible when the job completes")
                XCTAssertEqual(s.commits, handsOff ? 1 : 2, "the commit was reported first")
            }
        }
    }

    /// A background job (the schedule job's write) waits while requests' jobs are queued and
    /// runs in a commit of its own; under a load that never empties the queue it still goes,
    /// after `backgroundPatience` batches.
    func testBackgroundJobsGiveWayToQueuedJobsAndAreNotStarved() throws {
        try withTemporaryDatabase("wq-background") { path in
            let db = try SQLiteConnection.coalescingWALWriter(path: path)
            try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL)")
            let commits = Mutex(0)
            let writer = WriteQueue(connection: db) { _ in commits.withLock { $0 += 1 } }
            defer { writer.stop() }
            let order = Mutex<[String]>([])
            let group = DispatchGroup()
            @Sendable func job(_ name: String, then: (@Sendable () -> Void)? = nil) -> WriteQueue.Job {
                group.enter()
                return WriteQueue.Job(work: { db in
                    order.withLock { $0.append(name) }
                    try db.run("INSERT INTO t (v) VALUES (?)", [.text(name)])
                    then?()
                    return StorageCommit()
                }, completion: { _ in group.leave() })
            }
            // The writer held by a first job while the others queue.
            let release = DispatchSemaphore(value: 0)
            group.enter()
            writer.submit(WriteQueue.Job(work: { _ in release.wait(); return StorageCommit() }, completion: { _ in group.leave() }))
            Thread.sleep(forTimeInterval: 0.05)
            writer.submitBackground(job("b1"))
            writer.submit(job("r1"))
            writer.submit(job("r2"))
            writer.submitBackground(job("b2"))
            release.signal()
            XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
            XCTAssertEqual(order.withLock { $0 }, ["r1", "r2", "b1", "b2"])
            XCTAssertEqual(commits.withLock { $0 }, 4, "the held job, the requests together, each background job alone")

            // A chain of requests that always leaves one queued: the background job goes anyway.
            order.withLock { $0 = [] }
            group.enter()
            writer.submit(WriteQueue.Job(work: { _ in release.wait(); return StorageCommit() }, completion: { _ in group.leave() }))
            Thread.sleep(forTimeInterval: 0.05)
            writer.submitBackground(job("b"))
            @Sendable func chain(_ k: Int) -> @Sendable () -> Void {
                { if k < 30 { writer.submit(job("r\(k + 1)", then: chain(k + 1))) } }
            }
            writer.submit(job("r0", then: chain(0)))
            release.signal()
            XCTAssertEqual(group.wait(timeout: .now() + 10), .success)
            let ran = order.withLock { $0 }
            XCTAssertEqual(ran.count, 32)
            let position = try XCTUnwrap(ran.firstIndex(of: "b"))
            XCTAssertGreaterThanOrEqual(position, 1, "requests first")
            XCTAssertLessThanOrEqual(position, WriteQueue.backgroundPatience + 1, "\(ran)")
        }
    }

    /// The writer keeps when it last took requests' jobs (the schedule job sizes its writes
    /// by it); background jobs do not count.
    func testTheLastRequestBatchIsTimed() throws {
        try withTemporaryDatabase("wq-request-time") { path in
            let db = try SQLiteConnection.coalescingWALWriter(path: path)
            let writer = WriteQueue(connection: db) { _ in }
            defer { writer.stop() }
            func wait(_ submit: (WriteQueue.Job) -> Void) {
                let done = DispatchSemaphore(value: 0)
                submit(WriteQueue.Job(work: { _ in StorageCommit() }, completion: { _ in done.signal() }))
                XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
            }
            XCTAssertNil(writer.secondsSinceRequestBatch)
            wait(writer.submitBackground)
            XCTAssertNil(writer.secondsSinceRequestBatch, "a background job is no request")
            wait(writer.submit)
            let first = try XCTUnwrap(writer.secondsSinceRequestBatch)
            XCTAssertLessThan(first, 5)
            Thread.sleep(forTimeInterval: 0.2)
            wait(writer.submitBackground)
            let later = try XCTUnwrap(writer.secondsSinceRequestBatch)
            XCTAssertGreaterThanOrEqual(later, first + 0.19, "unchanged by the background job")
            wait(writer.submit)
            XCTAssertLessThan(try XCTUnwrap(writer.secondsSinceRequestBatch), later)
        }
    }

    func testFailingJobsRollBackAloneInEveryMix() throws {
        try withTemporaryDatabase("wq") { path in
            let db = try SQLiteConnection.coalescingWALWriter(path: path)
            try db.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE); CREATE TABLE c (n INTEGER NOT NULL)")
            try db.execute("INSERT INTO c VALUES (0)")
            let counted = Mutex(0)
            let writer = WriteQueue(connection: db, maxBatch: 64) { commit in counted.withLock { $0 += commit.writes } }
            defer { writer.stop() }

            var rng = SystemRandomNumberGenerator()
            var expectedRows = Set<Int>()
            var next = 0
            for _ in 0..<30 {
                // Jobs are submitted together so that they share batches in every mix.
                let group = DispatchGroup()
                let answers = Answers()
                var kinds: [Int: Kind] = [:]
                for _ in 0..<40 {
                    let id = next; next += 1
                    let kind = Kind.allCases.randomElement(using: &rng)!
                    kinds[id] = kind
                    group.enter()
                    writer.submit(WriteQueue.Job(work: { db in
                        switch kind {
                        case .ok:
                            try db.run("INSERT INTO t VALUES (?, ?)", [.int(id), .text("v\(id)")])
                            try db.run("UPDATE c SET n = n + 1")
                        case .refusesBeforeWriting:
                            _ = try db.queryOne("SELECT COUNT(*) FROM t")
                            throw APIError(409, "conflict", "refused")
                        case .refusesAfterWriting:
                            try db.run("INSERT INTO t VALUES (?, ?)", [.int(id), .text("v\(id)")])
                            try db.run("UPDATE c SET n = n + 1")
                            throw APIError(422, "late", "refused after writing")
                        case .otherErrorAfterWriting:
                            try db.run("UPDATE c SET n = n + 1000")
                            throw Odd()
                        case .constraint:
                            // Fails inside SQLite (v0 exists once the first job committed, or
                            // this very job's second insert clashes).
                            try db.run("INSERT INTO t VALUES (?, ?)", [.int(id), .text("dup\(id)")])
                            try db.run("INSERT INTO t VALUES (?, ?)", [.int(id + 1_000_000), .text("dup\(id)")])
                        }
                        return StorageCommit()
                    }, completion: { result in
                        if case .success = result { answers.set(id, true) } else { answers.set(id, false) }
                        group.leave()
                    }))
                }
                group.wait()
                let got = answers.all
                for (id, kind) in kinds {
                    XCTAssertEqual(got[id], kind == .ok, "job \(id) (\(kind))")
                    if kind == .ok { expectedRows.insert(id) }
                }
            }
            let reader = try SQLiteConnection(path: path, mode: .readOnly)
            let ids = Set(try reader.query("SELECT id FROM t").map { Int($0.int(0)) })
            XCTAssertEqual(ids.symmetricDifference(expectedRows).sorted(), [], "rows that should or should not be there")
            XCTAssertEqual(try reader.queryOne("SELECT n FROM c")?.int(0), Int64(expectedRows.count))
            // The commit metric counts what was made durable, not the failed jobs beside it.
            XCTAssertEqual(counted.withLock { $0 }, expectedRows.count)
        }
    }
}
