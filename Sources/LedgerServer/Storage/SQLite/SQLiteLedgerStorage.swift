import LedgerModel
import SQLiteKit

/// `LedgerStorage` over the embedded SQLite database: reads on the read pool, each body in
/// one WAL snapshot; writes as jobs of the writer's group commit (one writer thread, many
/// requests per transaction), answered once the batch is durable. With a single writer
/// every write sees the household as it is, so no row needs locking.
final class SQLiteLedgerStorage: LedgerStorage {
    let reads: ReadPool
    let writer: WriteQueue
    /// The row writes the writer holds back until COMMIT, when it was made with them.
    private let deferred: WriterRowState?
    /// The ledger's id index (`TransactionKeys.load` of the database, before the writer
    /// started): the writer adds to it, every connection looks ids up in it.
    let keys: TransactionKeys

    var cachesReads: Bool { true }
    var isOutOfSpace: Bool { writer.isOutOfSpace }

    init(reads: ReadPool, writer: WriteQueue, keys: TransactionKeys) {
        self.reads = reads
        self.writer = writer
        self.keys = keys
        self.deferred = writer.batchState as? WriterRowState
    }

    func read<T>(_ body: (any LedgerReading) throws -> T) throws -> T {
        do {
            return try reads.with { db in
                try db.execute("BEGIN")
                defer { try? db.execute("COMMIT") }
                return try body(SQLiteLedgerTransaction(db, keys: keys))
            }
        } catch {
            throw Self.domainError(error)
        }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                            completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        writer.submit(job(body, handsOff: false, completion: completion))
    }

    /// The writer thread itself hands the outcome to `executor` right after COMMIT (one
    /// hop, instead of the write queue's completion thread and then the executor).
    func write<T: Sendable>(household: String?, answeringOn executor: any WriteCompletionExecutor,
                            _ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                            completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        writer.submit(job(body, handsOff: true) { outcome in executor.execute { completion(outcome) } })
    }

    private func job<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T, handsOff: Bool,
                                  completion: @escaping @Sendable (Result<T, any Error>) -> Void) -> WriteQueue.Job {
        WriteQueue.Job.returning(defersRowWrites: deferred != nil, handsOff: handsOff, { db in
            let tx = SQLiteLedgerTransaction(db, deferred: self.deferred, keys: self.keys)
            let value = try body(tx)
            return (value, WriteQueue.WriteEffects(touched: tx.touched, revokesTokens: tx.revokedTokens))
        }, completion: { result in completion(result.mapError(Self.domainError)) })
    }

    /// How a failure leaves this storage: SQLite's busy and full results as the domain's
    /// `busy` and `outOfSpace`, anything else as it is. Applied once the writer is done with
    /// the error (it tells a full disk and a failed job apart by SQLite's own error).
    static func domainError(_ error: any Error) -> any Error {
        guard let e = error as? SQLiteError else { return error }
        if e.isBusy { return LedgerStorageError.busy }
        if e.isFull { return LedgerStorageError.outOfSpace }
        return error
    }
}
