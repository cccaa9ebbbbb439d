import Foundation
import LedgerModel
import SQLiteKit

/// One device's durable state in one SQLite file: the replica (household, children,
/// transactions), the pending queue, deferred records and sync state. Not thread-safe: use one
/// store from one thread at a time (open a second store on the same file for another thread).
final class LedgerStore {
    /// The SQLite connection; every multi-row change goes through `transaction`. Only `Store/`
    /// touches it (StoreBoundaryTests checks): everything else calls the store's methods.
    let db: SQLiteConnection
    /// The file path (`:memory:` for a private in-memory store).
    let path: String
    /// What a read in progress holds already (`withSnapshotHead`); nil outside one.
    var readMemo: ReadMemo?

    /// Opens (creating when absent) the store at `path` and brings its schema up to date.
    /// A new store gets a fresh device id and an empty local household. `busyTimeoutMs` is how
    /// long a write waits for another connection on the same file (another process) to finish.
    init(path: String, now: Int64 = Timestamp.nowMs(), busyTimeoutMs: Int32 = 5000) throws {
        self.path = path
        self.db = try SQLiteConnection(path: path, mode: .readWrite, busyTimeoutMs: busyTimeoutMs)
        try Migrator.migrate(db, LedgerStore.migrations)
        try db.transaction {
            if try string(.deviceId) == nil {
                try set(.deviceId, UUID().lowercased)
                try set(.phase, LedgerPhase.localOnly.storageValue)
                try set(.generation, "0")
            }
            if try db.queryOne("SELECT COUNT(*) FROM household")?.int(0) == 0 {
                try db.run("""
                    INSERT INTO household (id, name, currency, shared, created_at, modified_at)
                    VALUES (?, 'Family', 'USD', 0, ?, ?)
                    """, [.text(UUID().lowercased), .integer(now), .integer(now)])
            }
        }
    }

    /// Runs `body` with commits that are not flushed to disk one by one (`synchronous=NORMAL`:
    /// the WAL is flushed at checkpoints; a power cut may lose the last commits, never
    /// consistency). For work that a kill or power cut simply resumes, such as a join's staged
    /// pages.
    func withUnflushedCommits<T>(_ body: () throws -> T) throws -> T {
        try db.execute("PRAGMA synchronous = NORMAL")
        defer { try? db.execute("PRAGMA synchronous = FULL") }
        return try body()
    }

    /// Runs `body` in one SQLite transaction (nested calls become savepoints).
    @discardableResult
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try db.transaction(body)
    }

    /// Runs `body` inside one read transaction (or the transaction already open), so what it
    /// reads is one consistent state.
    func readConsistently<T>(_ body: () throws -> T) throws -> T {
        if db.isInTransaction { return try body() }
        // Prepared once (the connection's cache), not parsed at every read.
        try db.run("BEGIN")
        defer { try? db.run("COMMIT") }
        return try body()
    }

    /// SQLite's `data_version`: changes when another connection commits to the file.
    func dataVersion() throws -> Int64 {
        try db.queryOne("PRAGMA data_version")?.int(0) ?? 0
    }
}
