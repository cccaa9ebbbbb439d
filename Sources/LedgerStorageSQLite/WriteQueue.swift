import Foundation
import LedgerCore
import LedgerModel
import SQLiteKit
import Synchronization
import SystemKit

/// One writer thread over one read-write connection. Jobs submitted from any thread are
/// drained in batches and committed together in one SQLite transaction (group commit,
/// `GroupCommit`); a failing job rolls back alone. Completions run
/// only after the batch's COMMIT returned, i.e. after the data is durable, on a queue of
/// their own, so building the answers overlaps the writer's next batch; a job whose
/// completion only hands the outcome on (to a connection's event loop, which builds the
/// answer) has it called by the writer itself, one thread hop fewer.
package final class WriteQueue: Sendable {
    /// What a job runs and how it is answered, as one object: one allocation per write, not
    /// one per closure and hand-over.
    protocol Task: AnyObject {
        /// Runs on the writer, inside the batch's transaction (again, if the batch runs a
        /// second time with savepoints).
        func run(_ db: SQLiteConnection) throws -> StorageCommit
        /// The outcome, once durable (or the failure); called once.
        func complete(_ result: Result<Void, Error>)
    }

    /// One unit of work for a group commit. Its task runs on the writer thread inside the
    /// batch's transaction and reports what it changed; it is completed once the batch is
    /// durable (or failed).
    struct Job: @unchecked Sendable {
        let task: any Task
        /// Whether the work knows of the queue's `BatchState` (reads what it holds back
        /// through it); any other job runs after the held-back writes are in the database.
        let defersRowWrites: Bool
        /// Whether `complete` only hands the outcome to another thread (quick, never
        /// blocks): the writer then calls it itself right after COMMIT instead of queueing it
        /// on the completion thread.
        let handsOff: Bool

        init(task: any Task, defersRowWrites: Bool = false, handsOff: Bool = false) {
            self.task = task
            self.defersRowWrites = defersRowWrites
            self.handsOff = handsOff
        }

        init(work: @escaping (SQLiteConnection) throws -> StorageCommit,
             completion: @escaping @Sendable (Result<Void, Error>) -> Void, defersRowWrites: Bool = false,
             handsOff: Bool = false) {
            self.init(task: Closures(work: work, completion: completion), defersRowWrites: defersRowWrites, handsOff: handsOff)
        }

        /// A job whose work produces a value of type `T`, handed to `completion` once durable.
        static func returning<T>(defersRowWrites: Bool = false, handsOff: Bool = false, _ work: @escaping (SQLiteConnection) throws -> (T, StorageCommit),
                                 completion: @escaping @Sendable (Result<T, Error>) -> Void) -> Job {
            Job(task: Returning(work: work, completion: completion), defersRowWrites: defersRowWrites, handsOff: handsOff)
        }
    }

    private final class Closures: Task, @unchecked Sendable {
        let work: (SQLiteConnection) throws -> StorageCommit
        let completion: @Sendable (Result<Void, Error>) -> Void
        init(work: @escaping (SQLiteConnection) throws -> StorageCommit, completion: @escaping @Sendable (Result<Void, Error>) -> Void) {
            self.work = work
            self.completion = completion
        }
        func run(_ db: SQLiteConnection) throws -> StorageCommit { try work(db) }
        func complete(_ result: Result<Void, Error>) { completion(result) }
    }

    /// The value waits in the job between its work and its answer: written on the writer,
    /// read after COMMIT on the writer or on the completion thread the writer queued the
    /// answer on (the queue orders the two).
    private final class Returning<T>: Task, @unchecked Sendable {
        let work: (SQLiteConnection) throws -> (T, StorageCommit)
        let completion: @Sendable (Result<T, Error>) -> Void
        private var value: T?
        init(work: @escaping (SQLiteConnection) throws -> (T, StorageCommit), completion: @escaping @Sendable (Result<T, Error>) -> Void) {
            self.work = work
            self.completion = completion
        }
        func run(_ db: SQLiteConnection) throws -> StorageCommit {
            let (v, effects) = try work(db)
            value = v
            return effects
        }
        func complete(_ result: Result<Void, Error>) {
            // A job answered success has run (its last run set the value).
            completion(result.flatMap { value.map { .success($0) } ?? .failure(NoValue()) })
        }
    }

    /// A success without a value: never (a job that succeeded has run).
    struct NoValue: Error {}

    /// What the jobs of a batch keep between statements: row writes held back to write
    /// once, rows read once (see `WriterRowState`).
    protocol BatchState: AnyObject {
        /// Grows with every write held back (compared around a job: did it change anything).
        var changeCount: Int { get }
        /// Called at the start of each batch's transaction.
        func begin(_ db: SQLiteConnection) throws
        /// Writes what is held back into the transaction; `beforeOtherStatements`: what
        /// follows may change any row, so rows read and kept are forgotten too.
        func flush(_ db: SQLiteConnection, beforeOtherStatements: Bool) throws
        /// Forgets everything (the transaction, or the job's savepoint, rolled back).
        func discard()
    }

    private struct State {
        var jobs: [Job] = []
        /// Background jobs (`submitBackground`), in order: each a commit of its own, taken
        /// when `jobs` is empty, or after `backgroundPatience` batches passed it by.
        var background: [Job] = []
        /// Request batches committed while a background job waited.
        var passedOver = 0
        var stopped = false
        /// Whether the last write failed for lack of space (SQLITE_FULL) and nothing has
        /// committed since.
        var outOfSpace = false
    }

    private let state = Mutex(State())
    /// When the writer last took a batch of requests' jobs (`DispatchTime` nanoseconds; 0:
    /// never): background work sizes its writes by it (`secondsSinceRequestBatch`).
    private let lastRequestBatch = Atomic<UInt64>(0)
    private let signal = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private nonisolated(unsafe) let db: SQLiteConnection
    /// Called after every durable commit with what it changed, before any of its jobs is
    /// answered.
    private let onCommit: @Sendable (StorageCommit) -> Void
    /// Largest number of jobs in one commit. Default 256.
    let maxBatch: Int
    /// Moves the WAL into the database file off this thread; nil: SQLite's automatic
    /// checkpoints inside COMMIT.
    private let checkpointer: Checkpointer?
    /// Which CPUs the writer thread runs on; nil: wherever the scheduler puts it.
    private let placement: WriterPlacement?
    /// Whether commits queue push wakes.
    let pushWakes = PushWakeSwitch()
    /// What the batch's jobs hold back until COMMIT (used on the writer thread only).
    nonisolated(unsafe) let batchState: BatchState?
    /// Where completions run, in commit order.
    private let completions = DispatchQueue(label: "kidledger.write-completions", qos: .userInitiated)
    /// Called on the writer thread when writes start failing for lack of space and when
    /// they succeed again.
    private let onSpace: @Sendable (SQLiteError?) -> Void
    /// While out of space with nothing queued, how often the writer tries a small write
    /// (seconds, default 1), so readiness comes back without waiting for a client's write.
    let spaceProbeInterval: Double

    init(connection: SQLiteConnection, maxBatch: Int = 256, checkpointer: Checkpointer? = nil,
         batchState: BatchState? = nil, spaceProbeInterval: Double = 1, placement: WriterPlacement? = nil,
         onSpace: @escaping @Sendable (SQLiteError?) -> Void = { _ in },
         onCommit: @escaping @Sendable (StorageCommit) -> Void) {
        self.db = connection
        self.maxBatch = maxBatch
        self.checkpointer = checkpointer
        self.placement = placement
        self.batchState = batchState
        self.spaceProbeInterval = spaceProbeInterval
        self.onSpace = onSpace
        self.onCommit = onCommit
        let t = Thread { [self] in
            nameCurrentThread("kl-writer")
            self.placement?.start()
            self.run()
        }
        t.start()
    }

    /// Whether writes are failing for lack of space (SQLITE_FULL): true from the first such
    /// failure until the writer's probe (a write that needs new pages, tried after each
    /// commit and each second meanwhile) goes through.
    var isOutOfSpace: Bool { state.withLock { $0.outOfSpace } }

    func submit(_ job: Job) { enqueue(job, background: false) }

    /// Queues a background job (the schedule job's write): it runs in a commit of its own,
    /// only when no other job is queued, so a request's write never waits in a batch behind
    /// it nor queued behind it — only, at worst, for the one background commit under way.
    /// Under a load that never leaves the queue empty it still goes after
    /// `backgroundPatience` batches.
    func submitBackground(_ job: Job) { enqueue(job, background: true) }

    private func enqueue(_ job: Job, background: Bool) {
        let accepted = state.withLock { s -> Bool in
            if s.stopped { return false }
            if background { s.background.append(job) } else { s.jobs.append(job) }
            return true
        }
        if accepted { signal.signal() } else {
            job.task.complete(.failure(LedgerStorageError.shuttingDown))
        }
    }

    /// How many request batches may pass a waiting background job before it goes.
    static let backgroundPatience = 8

    /// Seconds since the writer last took a batch of requests' jobs (nil: none yet). While
    /// requests' writes flow, the schedule job writes less per commit, so a request that
    /// arrives during one of its commits waits for less.
    var secondsSinceRequestBatch: Double? {
        let last = lastRequestBatch.load(ordering: .relaxed)
        guard last > 0 else { return nil }
        let now = DispatchTime.now().uptimeNanoseconds
        return now > last ? Double(now - last) / 1e9 : 0
    }

    /// Finishes queued jobs, then stops the thread (and the checkpointer, after a last
    /// complete checkpoint).
    func stop() {
        state.withLock { $0.stopped = true }
        signal.signal()
        done.wait()
        completions.sync {}
        checkpointer?.stop()
    }

    /// Runs `work` on the writer's connection as a job of its own and waits for it (admin
    /// tasks, tests).
    func sync<T>(_ work: @escaping (SQLiteConnection) throws -> T) throws -> T {
        let box = ResultBox<T>()
        let sem = DispatchSemaphore(value: 0)
        submit(Job.returning({ db in (try work(db), StorageCommit()) }, completion: { r in box.set(r); sem.signal() }))
        sem.wait()
        return try box.get()
    }

    private func run() {
        var batch: [Job] = []
        while true {
            if isOutOfSpace {
                if signal.wait(timeout: .now() + spaceProbeInterval) == .timedOut { probeSpace(); continue }
            } else {
                signal.wait()
            }
            while true {
                // The queue's array and this one take turns (each keeps its storage): taking
                // a whole queue is a swap, so neither is grown again from nothing.
                let (stopped, requests) = state.withLock { s -> (Bool, Bool) in
                    if !s.background.isEmpty && (s.jobs.isEmpty || s.passedOver >= Self.backgroundPatience) {
                        // The background lane: one job, alone.
                        batch.append(s.background.removeFirst())
                        s.passedOver = 0
                        return (s.stopped, false)
                    }
                    if s.jobs.count <= maxBatch {
                        swap(&s.jobs, &batch)
                    } else {
                        batch.append(contentsOf: s.jobs[..<maxBatch])
                        s.jobs.removeFirst(maxBatch)
                    }
                    if !batch.isEmpty && !s.background.isEmpty { s.passedOver += 1 }
                    return (s.stopped, !batch.isEmpty)
                }
                if batch.isEmpty {
                    if stopped { done.signal(); return }
                    break
                }
                if requests { lastRequestBatch.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed) }
                commit(batch)
                placement?.recheck()
                if batch.capacity > maxBatch * 2 { batch = [] } else { batch.removeAll(keepingCapacity: true) }
            }
        }
    }

    private func commit(_ batch: [Job]) {
        let committed: GroupCommit.Committed
        do {
            committed = try GroupCommit.run(batch, in: Transaction(db, state: batchState, wakes: pushWakes.isOn), optimistic: true)
        } catch {
            if let full = error as? SQLiteError, full.isFull { spaceChanged(full) }
            completions.async { for job in batch { job.task.complete(.failure(error)) } }
            return
        }
        // A small commit can succeed on a full disk (pages rewritten in place): readiness
        // comes back only when the probe's pages fit.
        if isOutOfSpace { probeSpace() }
        onCommit(committed.commit)
        var queued: [(Job, Result<Void, Error>)] = []
        for (job, outcome) in zip(batch, committed.outcomes) {
            let r: Result<Void, Error>
            switch outcome {
            case .succeeded: r = .success(())
            case .failed(let error): r = .failure(error)
            case .again: r = .failure(LedgerStorageError.busy)   // one writer: no write loses a race
            }
            if job.handsOff { job.task.complete(r) } else { queued.append((job, r)) }
        }
        if !queued.isEmpty {
            let later = queued
            completions.async { for (job, r) in later { job.task.complete(r) } }
        }
        if let checkpointer {
            checkpointer.committed()
            if checkpointer.restartRequested { try? db.execute("PRAGMA wal_checkpoint(RESTART)") }
        }
    }

    /// The writer's transaction as the group commit drives it: by default jobs run without
    /// savepoints (each costs a copy of every page the job touches), and the row writes
    /// held back for the batch (`BatchState`) are written before any statement that may
    /// read them, before a savepoint and before COMMIT, and dropped with a rollback.
    private final class Transaction: GroupCommitTransaction {
        let db: SQLiteConnection
        let state: BatchState?
        /// Whether the batch queues push wakes.
        let wakes: Bool

        init(_ db: SQLiteConnection, state: BatchState?, wakes: Bool) {
            self.db = db
            self.state = state
            self.wakes = wakes
        }

        func begin(_ writes: [Job]) throws {
            // Prepared once and kept (execute would parse the text on every batch).
            try db.run("BEGIN IMMEDIATE")
            try state?.begin(db)
        }

        func prepare(_ write: Job, index: Int, savepoint: Bool) throws {
            // A job that does not know of the held-back writes, or one with a savepoint of
            // its own, starts with them in the database.
            if !write.defersRowWrites {
                try state?.flush(db, beforeOtherStatements: true)
            } else if savepoint {
                try state?.flush(db, beforeOtherStatements: false)
            }
        }

        func savepoint() throws { try db.run("SAVEPOINT job") }
        func release(_: Void) throws { try db.run("RELEASE job") }

        func rollBack(to _: Void) throws {
            state?.discard()
            try db.execute("ROLLBACK TO job; RELEASE job")
        }

        func run(_ write: Job) throws -> StorageCommit { try write.task.run(db) }

        var changes: Int { Int(db.totalChanges) &+ (state?.changeCount ?? 0) }

        /// SQLite may have ended the transaction itself (an I/O error, a full disk): then
        /// nothing of the batch may be committed or run on without it. Out of space, the
        /// whole batch fails alike: each of its jobs is answered 507 and may be retried as
        /// it was, none is half applied.
        func judge(_ error: any Error, write index: Int) -> (GroupCommit.Failure, culprit: Int) {
            guard db.isInTransaction, !((error as? SQLiteError)?.isFull ?? false) else { return (.batch, index) }
            return (error is any WriteRefusal ? .refusal : .write, index)
        }

        var queuesWakes: Bool { wakes }

        func queueWakes(for commit: StorageCommit) throws -> Int {
            guard wakes, !commit.touched.isEmpty else { return 0 }
            try state?.flush(db, beforeOtherStatements: false)
            return try SQLiteLedgerTransaction(db).queuePushWakes(for: commit, now: Timestamp.nowMs())
        }

        func commit() throws {
            try state?.flush(db, beforeOtherStatements: false)
            try db.run("COMMIT")
        }

        func rollBack() {
            state?.discard()
            if db.isInTransaction { try? db.execute("ROLLBACK") }
        }
    }
}

extension WriteQueue {
    /// Records whether writes fail for lack of space, telling `onSpace` of each change.
    private func spaceChanged(_ full: SQLiteError?) {
        let changed = state.withLock { s -> Bool in
            defer { s.outOfSpace = full != nil }
            return s.outOfSpace != (full != nil)
        }
        if changed { onSpace(full) }
    }

    /// Bytes the space probe writes (and deletes in the same transaction): enough to need
    /// new pages in the WAL and the database.
    static let spaceProbeBytes = 64 * 1024

    /// A small durable write that needs new pages: when it commits, there is room again.
    private func probeSpace() {
        do {
            try db.execute("BEGIN IMMEDIATE")
            try db.run("INSERT INTO storage_probe (bytes) VALUES (zeroblob(?))", [.int(WriteQueue.spaceProbeBytes)])
            try db.execute("DELETE FROM storage_probe")
            try db.execute("COMMIT")
            spaceChanged(nil)
        } catch {
            if db.isInTransaction { try? db.execute("ROLLBACK") }
        }
    }
}
