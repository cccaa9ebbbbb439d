import Foundation
import SQLiteKit
import Synchronization

/// One writer thread over one read-write connection. Jobs submitted from any thread run
/// in batches committed together in one SQLite transaction (group commit); a failing job
/// rolls back alone (see `execute(_:into:)`). Completions run only once the batch is
/// durable — after its COMMIT, or with `.overlapped` durability after the sync that follows
/// it while the next batch runs — on a queue of their own, so building the answers
/// overlaps the writer's next batch.
final class WriteQueue: Sendable {
    /// One unit of work for a group commit. `work` runs on the writer thread inside the
    /// batch's transaction and reports what it changed; `completion` runs once the batch
    /// is durable (or failed).
    struct Job: @unchecked Sendable {
        let work: (SQLiteConnection) throws -> WriteEffects
        let completion: @Sendable (Result<Void, Error>) -> Void
        /// Whether the work knows of the queue's `BatchState` (reads what it holds back
        /// through it); any other job runs after the held-back writes are in the database.
        let defersRowWrites: Bool

        init(work: @escaping (SQLiteConnection) throws -> WriteEffects,
             completion: @escaping @Sendable (Result<Void, Error>) -> Void, defersRowWrites: Bool = false) {
            self.work = work
            self.completion = completion
            self.defersRowWrites = defersRowWrites
        }

        /// A job whose work produces a value of type `T`, handed to `completion` once durable.
        /// The value waits in a slot of its own type between the two (no casts).
        static func returning<T>(defersRowWrites: Bool = false, _ work: @escaping (SQLiteConnection) throws -> (T, WriteEffects),
                                 completion: @escaping @Sendable (Result<T, Error>) -> Void) -> Job {
            let slot = ResultBox<T>()
            return Job(work: { db in
                let (value, effects) = try work(db)
                slot.set(.success(value))
                return effects
            }, completion: { result in
                switch result {
                case .success: completion(Result { try slot.get() })
                case .failure(let e): completion(.failure(e))
                }
            }, defersRowWrites: defersRowWrites)
        }
    }

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

    /// How a commit is made durable.
    enum Durability: Sendable {
        /// Inside COMMIT (`synchronous=FULL`): jobs are answered when it returns.
        case inCommit
        /// COMMIT only writes the WAL (its sync deferred, `deferWALCommitSyncs`); `sync` then
        /// makes it durable on a thread of its own while the writer runs the next jobs, whose
        /// COMMIT waits for that sync to end. `gate` learns of every commit before it is
        /// visible and of every sync after it, for answers built from reads.
        case overlapped(sync: @Sendable () throws -> Void, gate: DurabilityGate)
    }

    private struct State {
        var jobs: [Job] = []
        var stopped = false
        /// Whether the last write failed for lack of space (SQLITE_FULL) and nothing has
        /// committed since.
        var outOfSpace = false
    }

    private let state = Mutex(State())
    /// Signalled for each job submitted and each sync ended.
    private let signal = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private nonisolated(unsafe) let db: SQLiteConnection
    /// Called after each durable commit with the households it touched.
    private let onCommit: @Sendable (Set<String>) -> Void
    /// What one durable commit held.
    struct CommitSummary: Sendable {
        /// Jobs of the batch that succeeded (what the commit made durable; failed jobs left
        /// nothing behind and are not counted).
        var jobs: Int
        /// Whether one of its jobs revoked a token.
        var revokedTokens: Bool
    }

    /// Called after every durable commit, before any of its jobs is answered.
    private let afterEveryCommit: @Sendable (CommitSummary) -> Void
    /// Largest number of jobs in one commit. Default 256.
    let maxBatch: Int
    /// Moves the WAL into the database file off this thread; nil: SQLite's automatic
    /// checkpoints inside COMMIT.
    private let checkpointer: Checkpointer?
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
    /// With `.overlapped`: the thread that syncs commits and then answers them.
    private let syncer: CommitSyncer?

    init(connection: SQLiteConnection, maxBatch: Int = 256, checkpointer: Checkpointer? = nil,
         batchState: BatchState? = nil, durability: Durability = .inCommit, spaceProbeInterval: Double = 1,
         afterEveryCommit: @escaping @Sendable (CommitSummary) -> Void = { _ in },
         onSpace: @escaping @Sendable (SQLiteError?) -> Void = { _ in },
         onCommit: @escaping @Sendable (Set<String>) -> Void) {
        self.db = connection
        self.maxBatch = maxBatch
        self.checkpointer = checkpointer
        self.batchState = batchState
        self.spaceProbeInterval = spaceProbeInterval
        self.afterEveryCommit = afterEveryCommit
        self.onSpace = onSpace
        self.onCommit = onCommit
        if case .overlapped(let sync, let gate) = durability {
            let signal = self.signal
            syncer = CommitSyncer(sync: sync, gate: gate, completions: completions, afterEveryCommit: afterEveryCommit,
                                  onCommit: onCommit, ended: { signal.signal() })
        } else {
            syncer = nil
        }
        let t = Thread { [self] in self.run() }
        t.name = "kidledger-writer"
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
            job.completion(.failure(LedgerStorageError.shuttingDown))
        }
    }

    /// Finishes queued jobs, then stops the thread (and the checkpointer, after a last
    /// complete checkpoint).
    func stop() {
        state.withLock { $0.stopped = true }
        signal.signal()
        done.wait()
        syncer?.stop()
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

    /// The transaction being filled: its jobs (in order), and what those run so far did.
    private struct OpenBatch {
        var jobs: [Job] = []
        var results: [Result<Void, Error>] = []
        var touched = Set<String>()
        var revokedTokens = false
        /// Whether each job runs inside a savepoint of its own (see `runJob`).
        var savepoints = false
    }

    /// The writer thread. Queued jobs run in the open transaction as they come (up to
    /// `maxBatch` in one); the transaction commits as soon as no sync is in flight — at
    /// once with `.inCommit`, where COMMIT itself syncs; with `.overlapped`, when the sync of
    /// the previous commit has ended, so the jobs that arrive meanwhile run during it.
    private func run() {
        var open: OpenBatch?
        while true {
            if let batch = open, !(syncer?.isBusy ?? false) {
                open = nil
                commit(batch)
                continue
            }
            let room = maxBatch - (open?.jobs.count ?? 0)
            let (jobs, stopped) = state.withLock { s -> ([Job], Bool) in
                let n = min(s.jobs.count, room)
                let b = Array(s.jobs.prefix(n))
                s.jobs.removeFirst(n)
                return (b, s.stopped)
            }
            if !jobs.isEmpty {
                execute(jobs, into: &open)
                continue
            }
            if stopped && open == nil && !(syncer?.isBusy ?? false) && state.withLock({ $0.jobs.isEmpty }) {
                done.signal()
                return
            }
            if open == nil && isOutOfSpace {
                if signal.wait(timeout: .now() + spaceProbeInterval) == .timedOut { probeSpace() }
            } else {
                signal.wait()
            }
        }
    }

    /// Thrown by `runJob` without savepoints when a job failed after it had changed rows:
    /// the transaction is rolled back and its jobs run again with a savepoint each.
    private struct NeedsSavepoints: Error {}

    /// Runs `jobs` in the open transaction, beginning one when there is none. A failing job
    /// must leave nothing behind. Most jobs check everything before they write and fail
    /// with a `LedgerStorageError` (or `APIError`) having changed no row, so by default jobs
    /// run without savepoints (each costs a copy of every page the job touches); a job that
    /// fails in any other way, or after it changed rows, rolls the transaction back and
    /// every job of it runs again with a savepoint of its own (none of them was committed
    /// or answered). When the transaction itself fails (SQLite ended it, the disk is full),
    /// every job in it fails alike: each is answered with the error and may be retried as
    /// it was, none is half applied.
    private func execute(_ jobs: [Job], into open: inout OpenBatch?) {
        do {
            let fresh = open == nil
            if fresh { open = OpenBatch() }
            open!.jobs += jobs
            if fresh { try begin() }
            var i = open!.results.count
            while i < open!.jobs.count {
                do {
                    try runJob(open!.jobs[i], in: &open!)
                    i += 1
                } catch is NeedsSavepoints {
                    batchState?.discard()
                    try db.execute("ROLLBACK")
                    try begin()
                    let all = open!.jobs
                    open = OpenBatch(jobs: all, savepoints: true)
                    i = 0
                }
            }
        } catch {
            let failed = open?.jobs ?? jobs
            open = nil
            abandon(failed, error)
        }
    }

    /// Rolls back what is open and answers `jobs` with `error`. `number`: the commit's
    /// number when its COMMIT failed (readers may wait for it: it is passed as done).
    private func abandon(_ jobs: [Job], _ error: Error, number: UInt64? = nil) {
        batchState?.discard()
        if db.isInTransaction { try? db.execute("ROLLBACK") }
        if let full = error as? SQLiteError, full.isFull { spaceChanged(full) }
        if let syncer {
            // Behind the commits still being synced, so answers keep their order.
            syncer.enqueue(.init(number: number, summary: nil, touched: [], answers: jobs.map { ($0, .failure(error)) }))
        } else {
            completions.async { for job in jobs { job.completion(.failure(error)) } }
        }
    }

    private func begin() throws {
        // Prepared once and kept (execute would parse the text on every batch).
        try db.run("BEGIN IMMEDIATE")
        try batchState?.begin(db)
    }

    /// Runs one job in the open transaction and records its result.
    private func runJob(_ job: Job, in open: inout OpenBatch) throws {
        // A job that does not know of the held-back writes, or one with a savepoint of its
        // own, starts with them in the database.
        if !job.defersRowWrites {
            try batchState?.flush(db, beforeOtherStatements: true)
        } else if open.savepoints {
            try batchState?.flush(db, beforeOtherStatements: false)
        }
        let before = db.totalChanges, heldBefore = batchState?.changeCount ?? 0
        do {
            if open.savepoints { try db.run("SAVEPOINT job") }
            let outcome = try job.work(db)
            if open.savepoints { try db.run("RELEASE job") }
            for household in outcome.touched { open.touched.insert(household) }
            open.revokedTokens = open.revokedTokens || outcome.revokesTokens
            open.results.append(.success(()))
        } catch {
            // SQLite may have ended the transaction itself (I/O error, disk full): then
            // nothing of it may be committed or run on without it.
            guard db.isInTransaction, !((error as? SQLiteError)?.isFull ?? false) else { throw error }
            if open.savepoints {
                batchState?.discard()
                try db.execute("ROLLBACK TO job; RELEASE job")
            } else if !(error is LedgerStorageError || error is APIError) || db.totalChanges != before
                        || batchState?.changeCount ?? 0 != heldBefore {
                throw NeedsSavepoints()
            }
            open.results.append(.failure(error))
        }
    }

    /// Commits the open transaction and has its jobs answered once it is durable.
    private func commit(_ batch: OpenBatch) {
        var number: UInt64?
        do {
            try batchState?.flush(db, beforeOtherStatements: false)
            // Counted before COMMIT makes it visible: a read that sees it knows to wait.
            number = syncer?.gate.beginCommit()
            try db.run("COMMIT")
        } catch {
            abandon(batch.jobs, error, number: number)
            return
        }
        // A small commit can succeed on a full disk (pages rewritten in place): readiness
        // comes back only when the probe's pages fit.
        if isOutOfSpace { probeSpace() }
        let succeeded = batch.results.reduce(0) { n, r in if case .success = r { n + 1 } else { n } }
        let summary = CommitSummary(jobs: succeeded, revokedTokens: batch.revokedTokens)
        let answered = Array(zip(batch.jobs, batch.results))
        if let syncer {
            syncer.enqueue(.init(number: number, summary: summary, touched: batch.touched, answers: answered))
        } else {
            afterEveryCommit(summary)
            if !batch.touched.isEmpty { onCommit(batch.touched) }
            completions.async { for (job, r) in answered { job.completion(r) } }
        }
        if let checkpointer {
            checkpointer.committed()
            if checkpointer.restartRequested { try? db.execute("PRAGMA wal_checkpoint(RESTART)") }
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

/// A thread-safe slot for one result. The lock lives inside the box (`NSLock` is an
/// object of its own with a heap-allocated mutex: two more allocations per write request).
final class ResultBox<T>: @unchecked Sendable {
    private let lock = Mutex(())
    private var result: Result<T, Error>?
    func set(_ r: Result<T, Error>) { lock.withLock { _ in result = r } }
    func get() throws -> T { try lock.withLock { _ in result }!.get() }
}
