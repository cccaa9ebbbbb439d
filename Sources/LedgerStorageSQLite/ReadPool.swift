import Dispatch
import Foundation
import SQLiteKit
import Synchronization

/// Read-only SQLite connections (WAL readers) handed out to worker threads.
package final class ReadPool: Sendable {
    private struct Slot: @unchecked Sendable { let db: SQLiteConnection }
    private let idle = Mutex<[Slot]>([])
    private let path: String
    /// `PRAGMA mmap_size` of each connection; 0: none mapped.
    private let mmapBytes: Int
    /// The queue read work runs on.
    package let queue = DispatchQueue(label: "kidledger.read", qos: .userInitiated, attributes: .concurrent)

    /// `mmapBytes`: how much of the file each connection maps (see
    /// `LedgerAppConfiguration.readerMmapBytes`).
    init(path: String, mmapBytes: Int = 0) {
        self.path = path
        self.mmapBytes = mmapBytes
    }

    /// Runs `body` with a read-only connection on the calling thread.
    func with<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        let slot = try idle.withLock { $0.popLast() } ?? open()
        defer { idle.withLock { if $0.count < 16 { $0.append(slot) } } }
        return try body(slot.db)
    }

    private func open() throws -> Slot {
        let db = try SQLiteConnection(path: path, mode: .readOnly)
        if mmapBytes > 0 { try db.execute("PRAGMA mmap_size = \(mmapBytes)") }
        return Slot(db: db)
    }
}
