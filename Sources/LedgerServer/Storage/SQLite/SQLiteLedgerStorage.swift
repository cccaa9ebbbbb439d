import LedgerModel
import SQLiteKit

/// `LedgerStorage` over the embedded SQLite database: reads on the read pool, each body in
/// one WAL snapshot; writes as jobs of the writer's group commit (one writer thread, many
/// requests per transaction), answered once the batch is durable. With a single writer
/// every write sees the household as it is, so no row needs locking.
final class SQLiteLedgerStorage: LedgerStorage {
    let reads: ReadPool
    let writer: WriteQueue

    var cachesReads: Bool { true }
    var isOutOfSpace: Bool { writer.isOutOfSpace }

    init(reads: ReadPool, writer: WriteQueue) {
        self.reads = reads
        self.writer = writer
    }

    func read<T>(_ body: (any LedgerReading) throws -> T) throws -> T {
        try reads.with { db in
            try db.execute("BEGIN")
            defer { try? db.execute("COMMIT") }
            return try body(SQLiteLedgerTransaction(db))
        }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                            completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        writer.submit(WriteQueue.Job.returning({ db in
            let tx = SQLiteLedgerTransaction(db)
            let value = try body(tx)
            return (value, WriteQueue.WriteEffects(touched: tx.commit.touched, revokesTokens: !tx.commit.revokedTokens.isEmpty))
        }, completion: completion))
    }
}
