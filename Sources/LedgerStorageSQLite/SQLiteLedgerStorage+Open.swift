import Dispatch
import Foundation
import LedgerCore
import LedgerModel
import SQLiteKit
import SQLiteServerKit

/// Opening the server's SQLite storage in its data folder.
extension SQLiteLedgerStorage {
    /// Where and how: the server's configuration, as far as SQLite uses it.
    package struct Options: Sendable {
        /// The data folder (its lock file, and the disk whose interrupts `writerCPU` follows).
        package var dataDirectory: String
        package var databasePath: String
        /// The writer connection's page cache, in bytes (at least 64 KiB is used).
        package var writerCacheBytes: Int
        /// How much of the file each read connection maps (`PRAGMA mmap_size`; 0: none).
        package var readerMmapBytes: Int
        package var writerCPU: WriterCPU

        package init(dataDirectory: String, databasePath: String, writerCacheBytes: Int, readerMmapBytes: Int,
                     writerCPU: WriterCPU) {
            (self.dataDirectory, self.databasePath, self.writerCacheBytes) = (dataDirectory, databasePath, writerCacheBytes)
            (self.readerMmapBytes, self.writerCPU) = (readerMmapBytes, writerCPU)
        }
    }

    /// The page size of a database the server creates, in bytes (halves what the WAL and
    /// the checkpointer copy per commit against SQLite's 4 KiB; docs/performance.md). A
    /// database created with another page size keeps it.
    package static let newDatabasePageSize = 2048

    /// Opens the read-write connection and applies migrations; `migrated` hears of the
    /// versions applied, if any, and how long that took in milliseconds.
    package static func openWriter(path: String, cacheBytes: Int,
                                   migrated: ([Int], Int64) -> Void = { _, _ in }) throws -> SQLiteConnection {
        // A group commit's WAL frames reach the file in one write, then the usual fsync.
        let db = try SQLiteConnection.coalescingWALWriter(path: path, newFilePageSize: newDatabasePageSize)
        let started = DispatchTime.now().uptimeNanoseconds
        let applied = try Migrator.migrate(db, Schema.migrations)
        if !applied.isEmpty { migrated(applied, Int64((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)) }
        try db.execute("PRAGMA wal_autocheckpoint = 0")
        // Statement and savepoint journals in memory, not a temporary file per group commit.
        try db.execute("PRAGMA temp_store = MEMORY")
        // The pages every write touches (the ends of the ledger's indexes, children and
        // households rows) stay in the writer's cache.
        try db.execute("PRAGMA cache_size = -\(max(cacheBytes >> 10, 64))")
        return db
    }

    /// The storage of one serving process: takes the data folder's lock, opens (creating
    /// and migrating) the database, loads the id index, and starts the writer and the
    /// checkpointer. `log` gets the JSON lines worth an operator's eye (`migrated`,
    /// `indexed`, `writer_cpu`, `storage_full`, `storage_recovered`); `onCommit` hears of
    /// every durable commit before any of its writes is answered.
    package static func open(_ options: Options, log: @escaping @Sendable (JSONObject) -> Void,
                             onCommit: @escaping @Sendable (StorageCommit) -> Void) throws -> SQLiteLedgerStorage {
        // Released by `stop`, or when the lock object goes (a throw below drops it).
        let lock = try DataFolderLock(directory: options.dataDirectory)
        let db = try openWriter(path: options.databasePath, cacheBytes: options.writerCacheBytes) { applied, ms in
            log(["event": "migrated", "versions": .array(applied.map { .int(Int64($0)) }), "ms": .int(ms)])
        }
        let started = DispatchTime.now().uptimeNanoseconds
        // On a connection of its own: the scan's pages would otherwise fill the writer's cache.
        let keys = try TransactionKeys.load(SQLiteConnection(path: options.databasePath, mode: .readOnly))
        let ms = Int64((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)
        if ms >= 1000 {   // a start that waits on it says so (about a second per 2 million)
            log(["event": "indexed", "transactions": .int(Int64(keys.count)), "ms": .int(ms)])
        }
        let checkpointer = try Checkpointer(path: options.databasePath)
        let placement = options.writerCPU == .any ? nil : WriterPlacement(options.writerCPU, dataDirectory: options.dataDirectory) {
            decision, refused in
            var line: JSONObject = ["event": "writer_cpu", "reason": .string(decision.reason)]
            line["cpus"] = decision.cpus.map { .string(CPUList.format($0)) } ?? .string("any")
            if let refused { line["error"] = .string(String(cString: strerror(refused))) }
            log(line)
        }
        let writer = WriteQueue(connection: db, checkpointer: checkpointer, batchState: WriterRowState(), placement: placement,
                                onSpace: { full in
            log(full.map { ["event": "storage_full", "error": .string($0.description)] } ?? ["event": "storage_recovered"])
        }, onCommit: onCommit)
        let reads = ReadPool(path: options.databasePath, mmapBytes: options.readerMmapBytes)
        return SQLiteLedgerStorage(reads: reads, writer: writer, keys: keys, folderLock: lock)
    }

    /// Finishes the queued writes, stops the writer and the checkpointer, and lets the next
    /// server take the data folder.
    package func stop() {
        writer.stop()
        folderLock?.release()
    }
}
