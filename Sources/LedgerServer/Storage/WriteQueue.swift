import Foundation
import SQLiteKit
import Synchronization

/// One writer thread over one read-write connection. Jobs submitted from any thread are
/// drained in batches and committed together in one SQLite transaction (group commit);
/// each job runs in its own savepoint, so a failing job rolls back alone. Completions run
/// only after the batch's COMMIT returned, i.e. after the data is durable, on a queue of
/// their own, so building the answers overlaps the writer's next batch.
final class WriteQueue: Sendable {
    struct Job: @unchecked Sendable {
        let work: (SQLiteConnection) throws -> WriteOutcome
        let completion: @Sendable (Result<WriteOutcome, Error>) -> Void
    }

    /// What a job produced: a value for its completion, and the households it touched.
    struct WriteOutcome: @unchecked Sendable {
        var value: Any
        var touched: Set<String> = []
        /// Whether the work may have revoked a token (the token cache must forget).
        var revokesTokens = false
    }

    private struct State {
        var jobs: [Job] = []
        var stopped = false
    }

    private let state = Mutex(State())
    private let signal = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)
    private nonisolated(unsafe) let db: SQLiteConnection
    /// Called after each durable commit with the households it touched.
    private let onCommit: @Sendable (Set<String>) -> Void
    /// What one durable commit held.
    struct CommitSummary: Sendable {
        /// Jobs in the batch (failed ones included: they were rolled back to their savepoint).
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
    /// Where completions run, in commit order.
    private let completions = DispatchQueue(label: "kidledger.write-completions", qos: .userInitiated)

    init(connection: SQLiteConnection, maxBatch: Int = 256, checkpointer: Checkpointer? = nil,
         afterEveryCommit: @escaping @Sendable (CommitSummary) -> Void = { _ in },
         onCommit: @escaping @Sendable (Set<String>) -> Void) {
        self.db = connection
        self.maxBatch = maxBatch
        self.checkpointer = checkpointer
        self.afterEveryCommit = afterEveryCommit
        self.onCommit = onCommit
        let t = Thread { [self] in self.run() }
        t.name = "kidledger-writer"
        t.start()
    }

    func submit(_ job: Job) {
        let accepted = state.withLock { s -> Bool in
            if s.stopped { return false }
            s.jobs.append(job)
            return true
        }
        if accepted { signal.signal() } else {
            job.completion(.failure(APIError(503, "service_unavailable", "The server is shutting down.")))
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

    /// Runs `work` on the writer's connection outside the batch machinery (admin tasks).
    func sync<T>(_ work: @escaping (SQLiteConnection) throws -> T) throws -> T {
        let box = ResultBox<T>()
        let sem = DispatchSemaphore(value: 0)
        submit(Job(work: { db in WriteOutcome(value: try work(db)) }, completion: { r in
            box.set(r.map { $0.value as! T }); sem.signal()
        }))
        sem.wait()
        return try box.get()
    }

    private func run() {
        while true {
            signal.wait()
            while true {
                let (batch, stopped) = state.withLock { s -> ([Job], Bool) in
                    let n = min(s.jobs.count, maxBatch)
                    let b = Array(s.jobs.prefix(n))
                    s.jobs.removeFirst(n)
                    return (b, s.stopped)
                }
                if batch.isEmpty {
                    if stopped { done.signal(); return }
                    break
                }
                commit(batch)
            }
        }
    }

    private func commit(_ batch: [Job]) {
        var results: [Result<WriteOutcome, Error>] = []
        results.reserveCapacity(batch.count)
        var touched = Set<String>()
        var revokedTokens = false
        do {
            try db.execute("BEGIN IMMEDIATE")
            for job in batch {
                do {
                    try db.run("SAVEPOINT job")
                    let out = try job.work(db)
                    try db.run("RELEASE job")
                    touched.formUnion(out.touched)
                    revokedTokens = revokedTokens || out.revokesTokens
                    results.append(.success(out))
                } catch {
                    try? db.execute("ROLLBACK TO job; RELEASE job")
                    results.append(.failure(error))
                }
            }
            try db.execute("COMMIT")
        } catch {
            if db.isInTransaction { try? db.execute("ROLLBACK") }
            completions.async { for job in batch { job.completion(.failure(error)) } }
            return
        }
        afterEveryCommit(CommitSummary(jobs: batch.count, revokedTokens: revokedTokens))
        if !touched.isEmpty { onCommit(touched) }
        let answered = Array(zip(batch, results))
        completions.async { for (job, r) in answered { job.completion(r) } }
        if let checkpointer {
            checkpointer.committed()
            if checkpointer.restartRequested { try? db.execute("PRAGMA wal_checkpoint(RESTART)") }
        }
    }
}

/// A thread-safe slot for one result.
final class ResultBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var result: Result<T, Error>?
    func set(_ r: Result<T, Error>) { lock.lock(); result = r; lock.unlock() }
    func get() throws -> T {
        lock.lock(); defer { lock.unlock() }
        return try result!.get()
    }
}
