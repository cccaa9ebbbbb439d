import Foundation
import SQLiteKit
@testable import LedgerServer
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
                        return WriteQueue.WriteEffects()
                    }, completion: { _ in group.leave() }))
                }
                group.wait()
                let size = (try? FileManager.default.attributesOfItem(atPath: walPath)[.size] as? UInt64) ?? 0
                largest = max(largest, size)
            }
            writer.stop()
            XCTAssertLessThan(largest, 6 * 1024 * 1024, "the log starts over instead of growing with every commit")
            let after = (try? FileManager.default.attributesOfItem(atPath: walPath)[.size] as? UInt64) ?? 0
            XCTAssertEqual(after, 0, "stopping truncates the log: the database file is complete")
            let reader = try SQLiteConnection(path: path, mode: .readOnly)
            XCTAssertEqual(try reader.queryOne("SELECT COUNT(*) FROM t")?.int(0), 4000)
        }
    }
}
