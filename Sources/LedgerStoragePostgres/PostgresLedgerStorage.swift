#if Postgres
import Dispatch
import LedgerCore
import LedgerModel
import PostgresKit

/// `LedgerStorage` over PostgreSQL, for several stateless server processes sharing one
/// database.
///
/// Reads run in one REPEATABLE READ, READ ONLY transaction each: every statement of a
/// body (a feed page, a sync status) sees the same snapshot. Writes run in READ COMMITTED
/// transactions whose first statement about a household locks its row (see
/// `PostgresLedgerTransaction`); a write that loses a race the database detects (a
/// serialization failure, a deadlock, or a unique key taken by a concurrent identical
/// request) runs again from the start, where it sees the winner's committed rows and takes
/// the idempotent path. A database that cannot be reached is `unavailable`.
package final class PostgresLedgerStorage: LedgerStorage {
    package let pool: PGPool
    /// Where writes run (they are answered from there).
    private let workers: any RequestWorkers
    /// Called after every durable commit, before the write is answered (this process's own
    /// waiters, caches and counters).
    private let onCommit: @Sendable (StorageCommit) -> Void
    /// Called after such a commit once the write was answered (telling other processes).
    private let announce: @Sendable (StorageCommit) -> Void
    /// Where writes about one household go (several to a transaction); nil: each write is
    /// a transaction of its own.
    private let groupCommit: PostgresGroupCommit?
    /// Commits of other processes, while serving (nil: none are heard of).
    let bus: PostgresChangeBus?
    /// A session of its own for readiness, while serving.
    let probe: PGPool?
    /// The `application_name` of every session of the storage (tests' own sessions are
    /// `kidledger`): what the statement log of a test run is filtered by.
    package static let application = "kidledger-server"
    /// How many times a write lost to a concurrent one runs again before it fails.
    static let maxAttempts = 8
    /// Whether commits queue push wakes.
    package let pushWakes = PushWakeSwitch()
    /// Other processes commit too: nothing read may be kept past its request.
    package var cachesReads: Bool { false }
    /// An answer about a household is kept while its stamp (one row, `readStamp`) holds.
    package var stampsReads: Bool { true }
    /// The schedule job's catch-up pays this many households per transaction: a tenth of
    /// the commits (WAL flushes), locks, sequence and balance updates and round trips of one
    /// transaction each (docs/performance.md, the schedule job's round four).
    package var householdsPerBackgroundWrite: Int { 16 }
    /// Space on the database server is not tracked by this process.
    package var isOutOfSpace: Bool { false }

    /// - Parameters:
    ///   - setup: statements every new session runs first (`SET search_path`, timeouts).
    ///   - answerTimeout: longest wait for one statement's answer, in seconds, before the
    ///     session is given up (a database that stopped answering); nil: no limit.
    ///   - acquireTimeout: longest wait for a free connection, in seconds, before the
    ///     request is answered `unavailable`; nil: no limit.
    ///   - workers: where writes run; nil: a Dispatch queue of their own.
    ///   - committers: threads committing batches of writes about one household each
    ///     (`write(household:…)`, group commit); 0: each such write is a transaction of its own.
    ///   - bus: the change bus of a serving process (its readiness probe comes with it).
    ///   - transactionSetup: statements every transaction runs first (`SET LOCAL`, behind a pooler).
    ///   - pooled: `url` is a pooler in transaction mode (`PGConnection.pooled`).
    init(url: String, connections: Int = 16, setup: [String] = [], transactionSetup: [String] = [], pooled: Bool = false,
         acquireTimeout: Double? = nil,
         connectTimeout: Int = 5, answerTimeout: Double? = nil, workers: (any RequestWorkers)? = nil,
         committers: Int? = nil,
         onCommit: @escaping @Sendable (StorageCommit) -> Void = { _ in },
         announce: @escaping @Sendable (StorageCommit) -> Void = { _ in }, bus: PostgresChangeBus? = nil) {
        let pool = PGPool(url: url, size: connections, setup: setup, transactionSetup: transactionSetup, pooled: pooled,
                          application: Self.application, connectTimeout: connectTimeout,
                          answerTimeout: answerTimeout, acquireTimeout: acquireTimeout)
        self.pool = pool
        self.workers = workers ?? DispatchWorkers(queue: DispatchQueue(label: "kidledger.pg.write", qos: .userInitiated,
                                                                        attributes: .concurrent))
        self.onCommit = onCommit
        self.announce = announce
        self.bus = bus
        probe = bus == nil ? nil : PGPool(url: url, size: 1, setup: pooled ? [] : ["SET statement_timeout = 2000"],
                                          pooled: pooled, application: Self.application, connectTimeout: 2,
                                          answerTimeout: 2, acquireTimeout: 2)
        // An eighth of the connections commit batches (two by default: more make smaller
        // batches, fewer leave the database idle while one commits); the rest serve reads
        // and other writes.
        let n = committers ?? max(1, connections / 8)
        let wakes = pushWakes
        groupCommit = n == 0 ? nil : PostgresGroupCommit(committers: n) { gc, jobs in
            Self.runBatch(jobs, of: gc, pool: pool, wakes: wakes.isOn, onCommit: onCommit, announce: announce)
        }
    }

    deinit { groupCommit?.stop() }

    /// Applies the schema's migrations (once, whichever process gets there first).
    package func migrate() throws -> [Int] {
        try Self.mapped { try pool.with { try PostgresSchema.migrate($0) } }
    }

    package func read<T>(_ body: (any LedgerReading) throws -> T) throws -> T {
        try Self.mapped {
            try pool.with { db in
                try db.transaction(.repeatableRead, readOnly: true) { try body(PostgresLedgerTransaction(db, writing: false)) }
            }
        }
    }

    /// A write about one household joins the next batch of the group commit; any other
    /// runs alone on a worker. With an executor, the outcome is handed over to it.
    package func write<T: Sendable>(household: String?, answeringOn executor: (any WriteCompletionExecutor)?,
                                    _ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                                    completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        write(household: household, lookahead: nil, answeringOn: executor, body, completion: completion)
    }

    /// A write whose first lookup its batch reads ahead with its locks (one round trip for
    /// every such write of the batch).
    package func write<T: Sendable>(household: String, lookahead: WriteLookahead,
                                    answeringOn executor: (any WriteCompletionExecutor)?,
                                    _ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                                    completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        // Read ahead with the batch's other writes: ids that are not UUIDs would fail that
        // statement for all of them (the write then looks up as any other).
        let ids = [household, lookahead.account, lookahead.transactionId, lookahead.child]
        let usable = ids.allSatisfy { LedgerIDs.lowercaseCanonical($0) == $0 }
        write(household: household, lookahead: usable ? lookahead : nil, answeringOn: executor, body, completion: completion)
    }

    private func write<T: Sendable>(household: String?, lookahead: WriteLookahead?,
                                    answeringOn executor: (any WriteCompletionExecutor)?,
                                    _ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                                    completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        var answer = completion
        if let executor {
            answer = { result in executor.execute { completion(result) } }
        }
        let done = answer
        let accepted = if let household, let groupCommit {
            groupCommit.submit(PostgresGroupCommit.Job(household: household, lookahead: lookahead, body: body, completion: done))
        } else {
            workers.submit { [self] in
                Self.runAlone(body, pool: pool, wakes: pushWakes.isOn, onCommit: onCommit, announce: announce, completion: done)
            }
        }
        if !accepted { done(.failure(LedgerStorageError.unavailable(commitOutcomeUnknown: false))) }
    }

    /// Runs one batch of the group commit (see `PostgresGroupCommit`) and answers each of
    /// its writes, or puts those that lost a race back in the queue.
    private static func runBatch(_ jobs: [PostgresGroupCommit.Job], of gc: PostgresGroupCommit, pool: PGPool, wakes: Bool,
                                 onCommit: @Sendable (StorageCommit) -> Void, announce: @Sendable (StorageCommit) -> Void) {
        if jobs.count == 1, let job = jobs.first, job.lookahead == nil {
            // Alone: no savepoint needed, and races are run again right here. (One whose
            // first lookup can be read ahead takes the batch's way: one round trip fewer.)
            runAlone(job.run, pool: pool, wakes: wakes, onCommit: onCommit, announce: announce, completion: job.finish)
            return
        }
        var committed = GroupCommit.Committed(outcomes: [], commit: StorageCommit())
        do {
            try mapped {
                try pool.with { db in
                    defer { db.willQueue = nil }
                    let batch = Batch(PostgresLedgerTransaction(db, writing: true), wakes: wakes)
                    committed = try db.transaction(.readCommitted) { try GroupCommit.run(jobs, in: batch, optimistic: false) }
                }
            }
        } catch {
            // Nothing of the batch committed (or nobody knows): what each write saw inside
            // it may rest on another's uncommitted rows, so no answer from it stands.
            if let e = error as? PGError, e.lostARace {
                requeue(jobs, in: gc, failure: error)
            } else if let e = error as? PGError, let culprit = e.statementTag, jobs.indices.contains(culprit) {
                // A statement of one write failed on its way with the COMMIT: that write is
                // refused, the others (none committed, none answered) run again.
                jobs[culprit].finish(.failure(error))
                var others = jobs
                others.remove(at: culprit)
                requeue(others, in: gc, failure: error)
            } else {
                for job in jobs { job.finish(.failure(error)) }
            }
            return
        }
        let commit = committed.commit
        onCommit(commit)
        var lost: [PostgresGroupCommit.Job] = []
        for (job, outcome) in zip(jobs, committed.outcomes) {
            switch outcome {
            case .succeeded: job.finish(.success(()))
            case .failed(let error): job.finish(.failure(error))
            case .again: lost.append(job)
            }
        }
        requeue(lost, in: gc, failure: LedgerStorageError.unavailable(commitOutcomeUnknown: false))
        if !commit.isEmpty { announce(commit) }
    }

    /// A batch's transaction as the group commit drives it. Before the first write, every
    /// household's row is locked in one statement sent with BEGIN, with the first lookups
    /// of the writes that said what they are (`WriteLookahead`) read ahead (every later
    /// statement then reads what the locks' last holders committed). A write's savepoint is
    /// queued just before its first statement (no round trip of its own), and not at all
    /// for a write that sends none while it runs (a new transaction whose lookup was read
    /// ahead: its rows go out as it ends). A write's last statements travel with the next
    /// one's first, or with the COMMIT: a failure of those is charged to the write that
    /// queued them (by the statement's tag); with a savepoint, that is the one rolled back,
    /// else the batch is (that write refused, the others run again in a later batch:
    /// `runBatch`). A write undone takes the locks it took since its savepoint with it.
    private final class Batch: GroupCommitTransaction {
        let tx: PostgresLedgerTransaction
        /// Whether the batch queues push wakes.
        let wakes: Bool
        /// The running write's savepoint is due before its next statement.
        private var savepointDue = false
        /// The writes whose savepoint was sent, by index.
        private var savepointSent: Set<Int> = []
        private var running = -1

        init(_ tx: PostgresLedgerTransaction, wakes: Bool) {
            (self.tx, self.wakes) = (tx, wakes)
            let db = tx.db
            db.willQueue = { [weak self, weak tx, unowned db] in
                if let self, self.savepointDue {
                    self.savepointDue = false
                    self.savepointSent.insert(self.running)
                    let hook = db.willQueue
                    db.willQueue = nil
                    db.later("SAVEPOINT w")
                    db.willQueue = hook
                }
                // Rows held back go before any statement queued after them.
                tx?.sendHeld()
            }
        }

        func begin(_ writes: [PostgresGroupCommit.Job]) throws {
            tx.db.tag = -1
            try tx.lock(households: Array(Set(writes.map(\.household))),
                        reading: writes.compactMap { w in w.lookahead.map { (w.household, $0) } })
        }

        func prepare(_ write: PostgresGroupCommit.Job, index: Int, savepoint: Bool) {
            tx.db.tag = index
            running = index
            // A write whose first lookup was not read ahead may change what was.
            if write.lookahead == nil { tx.forgetLookahead(household: write.household) }
        }

        func savepoint() -> PostgresLedgerTransaction.SavepointState {
            let before = tx.savepointState
            savepointDue = true
            return before
        }

        func release(_: PostgresLedgerTransaction.SavepointState) {
            if savepointDue {
                // Nothing sent while it ran: its rows go now, under its tag, with no savepoint.
                savepointDue = false
                tx.sendHeld()
            } else {
                tx.db.later("RELEASE SAVEPOINT w")
            }
        }

        func rollBack(to before: PostgresLedgerTransaction.SavepointState) {
            // The write's rows held back never reach the database.
            tx.dropHeld()
            if savepointDue {
                savepointDue = false   // it sent nothing: only memory to undo
            } else {
                tx.db.later("ROLLBACK TO SAVEPOINT w")
                tx.db.later("RELEASE SAVEPOINT w")
            }
            tx.savepointState = before
            _ = tx.takeEffects()
        }

        func run(_ write: PostgresGroupCommit.Job) throws -> StorageCommit {
            try write.run(tx)
            return tx.takeEffects()
        }

        /// Every write has a savepoint: nothing to count.
        var changes: Int { 0 }

        func judge(_ error: any Error, write index: Int) -> (GroupCommit.Failure, culprit: Int) {
            guard let e = error as? PGError else { return (error is any WriteRefusal ? .refusal : .write, index) }
            if e.meansUnavailable { return (.batch, index) }
            let culprit = e.statementTag ?? index
            // Its statements went without a savepoint: nothing to roll back to but the batch.
            if !savepointSent.contains(culprit) { return (.batch, culprit) }
            return (e.lostARace ? .race : .write, culprit)
        }

        var queuesWakes: Bool { wakes }

        func queueWakes(for commit: StorageCommit) throws -> Int {
            // What follows is the batch's, no write's.
            tx.sendHeld()
            tx.db.tag = -1
            running = -1
            guard wakes, !commit.touched.isEmpty else { return 0 }
            tx.sendDeferred()
            return try tx.queuePushWakes(for: commit, now: Timestamp.nowMs())
        }

        func commit() { tx.sendDeferred() }

        /// `PGConnection.transaction` rolls the connection's transaction back.
        func rollBack() {}
    }

    /// Runs `body` in a write transaction of its own (again after a lost race), and answers it.
    private static func runAlone<T>(_ body: (any LedgerWriting) throws -> T, pool: PGPool, wakes: Bool,
                                    onCommit: @Sendable (StorageCommit) -> Void, announce: @Sendable (StorageCommit) -> Void,
                                    completion: (Result<T, any Error>) -> Void) {
        switch Result(catching: { try run(body, in: pool, wakes: wakes) }) {
        case .success(let (value, commit)):
            onCommit(commit)
            completion(.success(value))
            if !commit.isEmpty { announce(commit) }
        case .failure(let e):
            completion(.failure(e))
        }
    }

    /// Runs writes that lost a race again in a later batch, up to `maxAttempts` each.
    private static func requeue(_ jobs: [PostgresGroupCommit.Job], in gc: PostgresGroupCommit, failure: any Error) {
        var again: [PostgresGroupCommit.Job] = []
        for job in jobs {
            job.attempts += 1
            if job.attempts > maxAttempts { job.finish(.failure(failure)) } else { again.append(job) }
        }
        gc.retry(again)
    }

    package func writeHere<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T) throws -> T {
        try writeNow(body)
    }

    /// Runs `body` in a write transaction on the calling thread, again after a lost race.
    package func writeNow<T>(_ body: (any LedgerWriting) throws -> T) throws -> T {
        let (value, commit) = try Self.run(body, in: pool, wakes: pushWakes.isOn)
        onCommit(commit)
        if !commit.isEmpty { announce(commit) }
        return value
    }

    /// Whether the database answers a trivial query now.
    package func ping() -> Bool {
        (try? pool.with { try $0.queryOne("SELECT 1") }) != nil
    }

    /// `wakes`: whether the write queues push wakes.
    private static func run<T>(_ body: (any LedgerWriting) throws -> T, in pool: PGPool, wakes: Bool) throws -> (T, StorageCommit) {
        var attempt = 1
        while true {
            do {
                return try mapped {
                    try pool.with { db in
                        defer { db.willQueue = nil }
                        let tx = PostgresLedgerTransaction(db, writing: true)
                        var queued = 0
                        let value = try db.transaction(.readCommitted) {
                            let value = try body(tx)
                            tx.sendDeferred()
                            // The push wakes of its changes, in its transaction.
                            if wakes { queued = try tx.queuePushWakes(for: tx.currentEffects, now: Timestamp.nowMs()) }
                            return value
                        }
                        var effects = tx.takeEffects()
                        effects.writes = 1
                        effects.wakesQueued = queued
                        return (value, effects)
                    }
                }
            } catch let e as PGError where attempt < maxAttempts && e.lostARace {
                attempt += 1
            }
        }
    }

    /// Database unavailability (unreachable, restarting, no free connection in time, a
    /// statement past its timeout) becomes the domain's `unavailable`; everything else passes.
    static func mapped<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as PGError where e.meansUnavailable {
            throw LedgerStorageError.unavailable(commitOutcomeUnknown: e.commitOutcomeUnknown)
        }
    }
}
private extension PGError {
    /// Lost to a concurrent write the database detected (a serialization failure, a
    /// deadlock, or a unique key a concurrent identical request took): run again, the write
    /// reads the winner's committed rows.
    var lostARace: Bool { isRetryableTransaction || kind == .uniqueViolation }
    /// The database cannot serve now (unreachable, restarting, no free connection, a
    /// statement past its timeout): the domain's `unavailable`.
    var meansUnavailable: Bool { isUnavailable || kind == .queryCanceled || kind == .lockNotAvailable }
}
#endif
