import Foundation
import SQLiteKit
@testable import LedgerCore
@testable import LedgerStorageSQLite
import XCTest

/// Checkpoints run beside the writer, and the WAL still starts over under constant writes.
final class CheckpointerTests: XCTestCase {
    func testTheLogStaysBoundedAndIsEmptiedOnStop() throws {
        try withTemporaryDatabase("ckpt") { path in
            let db = try SQLiteConnection(path: path)
            try db.execute("PRAGMA wal_autocheckpoint = 0; CREATE TABLE t (id INTEGER PRIMARY KEY, pad BLOB)")
            let checkpointer = try Checkpointer(path: path, interval: 0.005, restartFrames: 256)
            let writer = WriteQueue(connection: db, maxBatch: 4, checkpointer: checkpointer) { _ in }
            let walPath = path + "-wal"
            var largest: UInt64 = 0
            // 4,000 rows of 4 KiB, one commit of a few rows at a time: about 4,000 WAL frames
            // without checkpoints; with them the log keeps being reused.
            for round in 0..<40 {
                let group = DispatchGroup()
                for i in 0..<100 {
                    group.enter()
                    writer.submit(WriteQueue.Job(work: { db in
                        try db.run("INSERT INTO t (id, pad) VALUES (?, zeroblob(4096))", [.int(round * 100 + i)])
                        return StorageCommit()
                    }, completion: { _ in group.leave() }))
                }
                group.wait()
                let size = (try? FileManager.default.attributesOfItem(atPath: walPath)[.size] as? UInt64) ?? 0
                largest = max(largest, size)
            }
            writer.stop()
            XCTAssertFalse(checkpointer.lastPrepare.isEmpty, "a restart was prepared beside the writer")
            XCTAssertLessThan(largest, 6 * 1024 * 1024, "the log starts over instead of growing with every commit")
            let after = (try? FileManager.default.attributesOfItem(atPath: walPath)[.size] as? UInt64) ?? 0
            XCTAssertEqual(after, 0, "stopping truncates the log: the database file is complete")
            let reader = try SQLiteConnection(path: path, mode: .readOnly)
            XCTAssertEqual(try reader.queryOne("SELECT COUNT(*) FROM t")?.int(0), 4000)
        }
    }

    /// Before asking the writer for a RESTART, the checkpoint thread copies and fsyncs pass
    /// after pass while a pass still finds many new frames, so the RESTART (which stalls
    /// every write) is left only what came in during a short last pass.
    func testARestartIsPreparedUntilAPassFindsFewNewFrames() {
        func run(_ cumulative: [Int?], from start: Int) -> (passes: [Int], calls: Int) {
            var calls = 0
            let passes = Checkpointer.preparePasses(from: start) {
                defer { calls += 1 }
                return calls < cumulative.count ? cumulative[calls] : 0
            }
            return (passes, calls)
        }
        // Shrinking passes: stop at the first one under the threshold.
        let few = Checkpointer.fewFrames
        XCTAssertEqual(run([10_000 + 6_000, 16_000 + 2_000, 18_000 + few - 1, 99_999], from: 10_000).passes,
                       [6_000, 2_000, few - 1])
        // A pass that fails ends it.
        XCTAssertEqual(run([5_000, nil, 9_000], from: 0).passes, [5_000])
        // Passes that never shrink: bounded.
        let endless = run(Array(1...20).map { Optional($0 * 10 * few) }, from: 0)
        XCTAssertEqual(endless.passes.count, Checkpointer.maxPreparePasses)
        XCTAssertEqual(endless.calls, Checkpointer.maxPreparePasses)
        XCTAssertEqual(Set(endless.passes), [10 * few])
    }
}
