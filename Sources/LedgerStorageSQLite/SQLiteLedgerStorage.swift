import LedgerCore
import LedgerModel
import SQLiteKit

/// `LedgerStorage` over the embedded SQLite database: reads on the read pool, each body in
/// one WAL snapshot; writes as jobs of the writer's group commit (one writer thread, many
/// requests per transaction), answered once the batch is durable. With a single writer
/// every write sees the household as it is, so no row needs locking.
package final class SQLiteLedgerStorage: LedgerStorage {
    package let reads: ReadPool
    package let writer: WriteQueue
    /// The row writes the writer holds back until COMMIT, when it was made with them.
    fileprivate let deferred: WriterRowState?
    /// The ledger's id index (`TransactionKeys.load` of the database, before the writer
    /// started): the writer adds to it, every connection looks ids up in it.
    package let keys: TransactionKeys
    /// The data folder's lock, held while this storage serves (nil: opened without one).
    let folderLock: DataFolderLock?

    package var cachesReads: Bool { true }
    package var pushWakes: PushWakeSwitch { writer.pushWakes }
    package var isOutOfSpace: Bool { writer.isOutOfSpace }

    init(reads: ReadPool, writer: WriteQueue, keys: TransactionKeys, folderLock: DataFolderLock? = nil) {
        self.reads = reads
        self.writer = writer
        self.keys = keys
        self.folderLock = folderLock
        self.deferred = writer.batchState as? WriterRowState
    }

    package func read<T>(_ body: (any LedgerReading) throws -> T) throws -> T {
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

    /// Every write is a job of the writer's next group commit (one writer: `household` needs
    /// no lock). With an executor, the writer thread itself hands the outcome over right
    /// after COMMIT (one hop, instead of the write queue's completion thread and then the
    /// executor).
    /// Specialized for the durable POST of a transaction, the most common write: the
    /// server reaches this through `LedgerStorage`, where `T` is not known, and generic code
    /// looks up the metadata of `Write<T>`, `T?` and `Result<T, Error>` at run time on every
    /// write (about 2,000 instructions).
    @_specialize(where T == TransactionWrite)
    package func write<T: Sendable>(household: String?, answeringOn executor: (any WriteCompletionExecutor)?,
                                    _ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                                    completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        writer.submit(WriteQueue.Job(task: Write(self, body, executor: executor, completion: completion),
                                     defersRowWrites: deferred != nil, handsOff: executor != nil))
    }

    /// A job of the writer's background lane: a commit of its own, taken only when no
    /// request's write is queued (`WriteQueue.submitBackground`).
    package func backgroundWrite<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                                              completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        writer.submitBackground(WriteQueue.Job(task: Write(self, body, executor: nil, completion: completion),
                                               defersRowWrites: deferred != nil))
    }

    package func secondsSinceRequestWrite() -> Double? { writer.secondsSinceRequestBatch }

    /// One write as one object: its body, its value between COMMIT and the answer, and the
    /// answer. The writer calls it through `WriteQueue.Task`, where `T` is not known, so
    /// what depends on `T` runs in two closures made where it is (`perform`, `deliver`:
    /// they capture nothing, so making them allocates nothing). Handed to `executor`, the
    /// object goes along and is usually freed there, not on the writer thread.
    private final class Write<T: Sendable>: WriteQueue.Task, @unchecked Sendable {
        let deferred: WriterRowState?
        let keys: TransactionKeys?
        let body: @Sendable (any LedgerWriting) throws -> T
        let executor: (any WriteCompletionExecutor)?
        let completion: @Sendable (Result<T, any Error>) -> Void
        /// Runs `body` and keeps its value.
        let perform: (Write<T>, SQLiteLedgerTransaction) throws -> Void
        /// Calls `completion` with the outcome.
        let deliver: (Write<T>) -> Void
        /// Set on the writer; read after COMMIT, by `deliver` on the writer's completion
        /// thread or on the executor (the queue in between orders the two).
        var value: T?
        var failure: (any Error)?

        init(_ storage: SQLiteLedgerStorage, _ body: @escaping @Sendable (any LedgerWriting) throws -> T,
             executor: (any WriteCompletionExecutor)?, completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
            deferred = storage.deferred
            keys = storage.keys
            self.body = body
            self.executor = executor
            self.completion = completion
            perform = { w, tx in w.value = try w.body(tx) }
            deliver = { w in w.completion(w.outcome) }
        }

        var outcome: Result<T, any Error> {
            if let failure { return .failure(SQLiteLedgerStorage.domainError(failure)) }
            // A job answered success has run (its last run set the value).
            guard let value else { return .failure(WriteQueue.NoValue()) }
            return .success(value)
        }

        func run(_ db: SQLiteConnection) throws -> StorageCommit {
            let tx = SQLiteLedgerTransaction(db, deferred: deferred, keys: keys)
            try perform(self, tx)
            return tx.effects
        }

        func complete(_ result: Result<Void, any Error>) {
            if case .failure(let error) = result { failure = error }
            guard let executor else { return deliver(self) }
            executor.execute { self.deliver(self) }
        }
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
