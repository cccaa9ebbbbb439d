import Dispatch
import Foundation
import SQLiteKit
import Synchronization

/// Read-only SQLite connections (WAL readers) handed out to worker threads.
final class ReadPool: Sendable {
    private struct Slot: @unchecked Sendable { let db: SQLiteConnection }
    private let idle = Mutex<[Slot]>([])
    private let path: String
    /// The queue read work runs on.
    let queue = DispatchQueue(label: "kidledger.read", qos: .userInitiated, attributes: .concurrent)

    init(path: String) {
        self.path = path
    }

    /// Runs `body` with a read-only connection on the calling thread.
    func with<T>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        let slot = try idle.withLock { $0.popLast() } ?? Slot(db: SQLiteConnection(path: path, mode: .readOnly))
        defer { idle.withLock { if $0.count < 16 { $0.append(slot) } } }
        return try body(slot.db)
    }
}
