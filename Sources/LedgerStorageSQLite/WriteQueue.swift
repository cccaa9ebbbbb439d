import Foundation
import LedgerCore
import SQLiteKit
import Synchronization
import SystemKit

/// One writer thread over one read-write connection. Jobs submitted from any thread are
/// drained in batches and committed together in one SQLite transaction (group commit);
/// a failing job rolls back alone (see `run(_:savepoints:)`). Completions run
/// only after the batch's COMMIT returned, i.e. after the data is durable, on a queue of
/// their own, so building the answers overlaps the writer's next batch; a job whose
/// completion only hands the outcome on (to a connection's event loop, which builds the
/// answer) has it called by the writer itself, one thread hop fewer.
package final class WriteQueue: Sendable {
    /// What a job runs and how it is answered, as one object. A write built of closures
    /// (its work, its answer, the slot its value waits in between, and a layer of each for
    /// every hand-over) was half a dozen allocations, every one freed on the writer thread
    /// when its batch was done.
    protocol Task: AnyObject {
        /// Runs on the writer, inside the batch's transaction (again, if the batch runs a
        /// second time with savepoints).
        func run(_ db: SQLiteConnection) throws -> WriteEffects
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

        init(work: @escaping (SQLiteConnection) throws -> WriteEffects,
             completion: @escaping @Sendable (Result<Void, Error>) -> Void, defersRowWrites: Bool = false,
             handsOff: Bool = false) {
            self.init(task: Closures(work: work, completion: completion), defersRowWrites: defersRowWrites, handsOff: handsOff)
        }

        /// A job whose work produces a value of type `T`, handed to `completion` once durable.
        static func returning<T>(defersRowWrites: Bool = false, handsOff: Bool = false, _ work: @escaping (SQLiteConnection) throws -> (T, WriteEffects),
                                 completion: @escaping @Sendable (Result<T, Error>) -> Void) -> Job {
            Job(task: Returning(work: work, completion: completion), defersRowWrites: defersRowWrites, handsOff: handsOff)
        }
    }

    private final class Closures: Task, @unchecked Sendable {
        let work: (SQLiteConnection) throws -> WriteEffects
        let completion: @Sendable (Result<Void, Error>) -> Void
        init(work: @escaping (SQLiteConnection) throws -> WriteEffects, completion: @escaping @Sendable (Result<Void, Error>) -> Void) {
            self.work = work
            self.completion = completion
        }
        func run(_ db: SQLiteConnection) throws -> WriteEffects { try work(db) }
        func complete(_ result: Result<Void, Error>) { completion(result) }
    }

    /// The value waits in the job between its work and its answer: written on the writer,
    /// read after COMMIT on the writer or on the completion thread the writer queued the
    /// answer on (the queue orders the two).
    private final class Returning<T>: Task, @unchecked Sendable {
        let work: (SQLiteConnection) throws -> (T, WriteEffects)
        let completion: @Sendable (Result<T, Error>) -> Void
        private var value: T?
        init(work: @escaping (SQLiteConnection) throws -> (T, WriteEffects), completion: @escaping @Sendable (Result<T, Error>) -> Void) {
            self.work = work
            self.completion = completion
        }
        func run(_ db: SQLiteConnection) throws -> WriteEffects {
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

    /// What a job changed besides rows: households whose feed moved and whether a token
    /// may have been revoked (the token cache must forget).
    struct WriteEffects: Sendable {
        /// Each household once (gathered into the batch's set).
        var touched: [String] = []
        var revokesTokens = false
    }

    private struct State {
        var jobs: [Job] = []
        var stopped = false
        /// Whether the last write failed for lack of space (SQLITE_FULL) and nothing has
        /// committed since.
        var outOfSpace = false
    }

    private let state = Mutex(State())
    private let signal = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private nonisolated(unsafe) let db: SQLiteConnection
    /// Called after each durable commit with the households it touched.
    private let onCommit: @Sendable (Set<String>) -> Void
    /// What one durable commit held.
    package struct CommitSummary: Sendable {
        /// Jobs of the batch that succeeded (what the commit made durable; failed jobs left
        /// nothing behind and are not counted).
        package var jobs: Int
        /// Whether one of its jobs revoked a token.
        package var revokedTokens: Bool
    }

    /// Called after every durable commit, before any of its jobs is answered.
    private let afterEveryCommit: @Sendable (CommitSummary) -> Void
    /// Largest number of jobs in one commit. Default 256.
    let maxBatch: Int
    /// Moves the WAL into the database file off this thread; nil: SQLite's automatic
    /// checkpoints inside COMMIT.
    private let checkpointer: Checkpointer?
    /// Which CPUs the writer thread runs on; nil: wherever the scheduler puts it.
    private let placement: WriterPlacement?
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
         afterEveryCommit: @escaping @Sendable (CommitSummary) -> Void = { _ in },
         onSpace: @escaping @Sendable (SQLiteError?) -> Void = { _ in },
         onCommit: @escaping @Sendable (Set<String>) -> Void) {
        self.db = connection
        self.maxBatch = maxBatch
        self.checkpointer = checkpointer
        self.placement = placement
        self.batchState = batchState
        self.spaceProbeInterval = spaceProbeInterval
        self.afterEveryCommit = afterEveryCommit
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

    func submit(_ job: Job) {
        let accepted = state.withLock { s -> Bool in
            if s.stopped { return false }
            s.jobs.append(job)
            return true
        }
        if accepted { signal.signal() } else {
            job.task.complete(.failure(LedgerStorageError.shuttingDown))
        }
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
        submit(Job.returning({ db in (try work(db), WriteEffects()) }, completion: { r in box.set(r); sem.signal() }))
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
                let stopped = state.withLock { s -> Bool in
                    if s.jobs.count <= maxBatch {
                        swap(&s.jobs, &batch)
                    } else {
                        batch.append(contentsOf: s.jobs[..<maxBatch])
                        s.jobs.removeFirst(maxBatch)
                    }
                    return s.stopped
                }
                if batch.isEmpty {
                    if stopped { done.signal(); return }
                    break
                }
                commit(batch)
                placement?.recheck()
                if batch.capacity > maxBatch * 2 { batch = [] } else { batch.removeAll(keepingCapacity: true) }
            }
        }
    }

    /// What one batch produced inside its transaction.
    private struct BatchRun {
        var results: [Result<Void, Error>] = []
        var touched = Set<String>()
        /// The household last added to `touched` (a run of writes to one household hashes
        /// its id once).
        var lastTouched: String?
        var revokedTokens = false

        mutating func touch(_ household: String) {
            if household == lastTouched { return }
            touched.insert(household)
            lastTouched = household
        }
    }

    /// Thrown by `run(_:savepoints: false)` when a job failed after it had changed rows: the
    /// transaction is rolled back and the batch runs again with a savepoint per job.
    private struct NeedsSavepoints: Error {}

    private func commit(_ batch: [Job]) {
        let run: BatchRun
        do {
            do {
                run = try self.run(batch, savepoints: false)
            } catch is NeedsSavepoints {
                run = try self.run(batch, savepoints: true)
            }
        } catch {
            if let full = error as? SQLiteError, full.isFull { spaceChanged(full) }
            completions.async { for job in batch { job.task.complete(.failure(error)) } }
            return
        }
        // A small commit can succeed on a full disk (pages rewritten in place): readiness
        // comes back only when the probe's pages fit.
        if isOutOfSpace { probeSpace() }
        let succeeded = run.results.reduce(0) { n, r in if case .success = r { n + 1 } else { n } }
        afterEveryCommit(CommitSummary(jobs: succeeded, revokedTokens: run.revokedTokens))
        if !run.touched.isEmpty { onCommit(run.touched) }
        var queued: [(Job, Result<Void, Error>)] = []
        for (job, r) in zip(batch, run.results) {
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

    /// Runs the jobs in one transaction and commits it. A failing job must leave nothing
    /// behind. Most jobs check everything before they write and fail with a `WriteRefusal`
    /// having changed no row, so by default jobs run without savepoints (each costs a copy
    /// of every page the job touches); a job that fails in any other way, or after it
    /// changed rows, sends the whole batch round again with a savepoint per job. Nothing
    /// of the first round was committed or answered.
    private func run(_ batch: [Job], savepoints: Bool) throws -> BatchRun {
        var out = BatchRun()
        out.results.reserveCapacity(batch.count)
        do {
            // Prepared once and kept (execute would parse the text on every batch).
            try db.run("BEGIN IMMEDIATE")
            try batchState?.begin(db)
            for job in batch {
                // A job that does not know of the held-back writes, or one with a savepoint
                // of its own, starts with them in the database.
                if !job.defersRowWrites {
                    try batchState?.flush(db, beforeOtherStatements: true)
                } else if savepoints {
                    try batchState?.flush(db, beforeOtherStatements: false)
                }
                let before = db.totalChanges, heldBefore = batchState?.changeCount ?? 0
                do {
                    if savepoints { try db.run("SAVEPOINT job") }
                    let outcome = try job.task.run(db)
                    if savepoints { try db.run("RELEASE job") }
                    for household in outcome.touched { out.touch(household) }
                    out.revokedTokens = out.revokedTokens || outcome.revokesTokens
                    out.results.append(.success(()))
                } catch {
                    // SQLite may have ended the transaction itself (I/O error, disk full):
                    // then nothing of the batch may be committed or run on without it. Out
                    // of space, the whole batch fails alike: each of its jobs is answered
                    // 507 and may be retried as it was, none is half applied.
                    guard db.isInTransaction, !((error as? SQLiteError)?.isFull ?? false) else { throw error }
                    if savepoints {
                        batchState?.discard()
                        try db.execute("ROLLBACK TO job; RELEASE job")
                    } else if !(error is any WriteRefusal) || db.totalChanges != before
                                || batchState?.changeCount ?? 0 != heldBefore {
                        throw NeedsSavepoints()
                    }
                    out.results.append(.failure(error))
                }
            }
            try batchState?.flush(db, beforeOtherStatements: false)
            try db.run("COMMIT")
        } catch {
            batchState?.discard()
            if db.isInTransaction { try? db.execute("ROLLBACK") }
            throw error
        }
        return out
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
