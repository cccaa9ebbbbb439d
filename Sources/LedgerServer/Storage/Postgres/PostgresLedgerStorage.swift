#if Postgres
import Dispatch
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
final class PostgresLedgerStorage: LedgerStorage {
    let pool: PGPool
    /// Where writes run (they are answered from there).
    private let workers: any RequestWorkers
    /// Called after every durable commit, before the write is answered (this process's own
    /// waiters, caches and counters).
    private let onCommit: @Sendable (StorageCommit) -> Void
    /// Called after such a commit once the write was answered (telling other processes).
    private let announce: @Sendable (StorageCommit) -> Void
    /// How many times a write lost to a concurrent one runs again before it fails.
    static let maxAttempts = 8
    /// Other processes commit too: nothing read may be kept past its request.
    var cachesReads: Bool { false }
    /// Space on the database server is not tracked by this process.
    var isOutOfSpace: Bool { false }

    /// - Parameters:
    ///   - setup: statements every new session runs first (`SET search_path`, timeouts).
    ///   - answerTimeout: longest wait for one statement's answer, in seconds, before the
    ///     session is given up (a database that stopped answering); nil: no limit.
    ///   - acquireTimeout: longest wait for a free connection, in seconds, before the
    ///     request is answered `unavailable`; nil: no limit.
    ///   - workers: where writes run; nil: a Dispatch queue of their own.
    init(url: String, connections: Int = 16, setup: [String] = [], acquireTimeout: Double? = nil,
         connectTimeout: Int = 5, answerTimeout: Double? = nil, workers: (any RequestWorkers)? = nil,
         onCommit: @escaping @Sendable (StorageCommit) -> Void = { _ in },
         announce: @escaping @Sendable (StorageCommit) -> Void = { _ in }) {
        pool = PGPool(url: url, size: connections, setup: setup, connectTimeout: connectTimeout,
                      answerTimeout: answerTimeout, acquireTimeout: acquireTimeout)
        self.workers = workers ?? DispatchWorkers(queue: DispatchQueue(label: "kidledger.pg.write", qos: .userInitiated,
                                                                        attributes: .concurrent))
        self.onCommit = onCommit
        self.announce = announce
    }

    /// Applies the schema's migrations (once, whichever process gets there first).
    func migrate() throws -> [Int] {
        try Self.mapped { try pool.with { try PostgresSchema.migrate($0) } }
    }

    func read<T>(_ body: (any LedgerReading) throws -> T) throws -> T {
        try Self.mapped {
            try pool.with { db in
                try db.transaction(.repeatableRead, readOnly: true) { try body(PostgresLedgerTransaction(db, writing: false)) }
            }
        }
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T,
                            completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
        let accepted = workers.submit { [self] in
            switch Result(catching: { try run(body) }) {
            case .success(let (value, commit)):
                onCommit(commit)
                completion(.success(value))
                if !commit.isEmpty { announce(commit) }
            case .failure(let e):
                completion(.failure(e))
            }
        }
        if !accepted { completion(.failure(LedgerStorageError.unavailable(commitOutcomeUnknown: false))) }
    }

    /// Runs `body` in a write transaction on the calling thread, again after a lost race.
    func writeNow<T>(_ body: (any LedgerWriting) throws -> T) throws -> T {
        let (value, commit) = try run(body)
        onCommit(commit)
        if !commit.isEmpty { announce(commit) }
        return value
    }

    /// Whether the database answers a trivial query now.
    func ping() -> Bool {
        (try? pool.with { try $0.queryOne("SELECT 1") }) != nil
    }

    private func run<T>(_ body: (any LedgerWriting) throws -> T) throws -> (T, StorageCommit) {
        var attempt = 1
        while true {
            do {
                return try Self.mapped {
                    try pool.with { db in
                        let tx = PostgresLedgerTransaction(db, writing: true)
                        let value = try db.transaction(.readCommitted) { try body(tx) }
                        return (value, tx.commit)
                    }
                }
            } catch let e as PGError where attempt < Self.maxAttempts
                        && (e.isRetryableTransaction || e.kind == .uniqueViolation) {
                attempt += 1
            }
        }
    }

    /// Database unavailability (unreachable, restarting, no free connection in time, a
    /// statement past its timeout) becomes the domain's `unavailable`; everything else passes.
    private static func mapped<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as PGError where e.isUnavailable || e.kind == .queryCanceled || e.kind == .lockNotAvailable {
            throw LedgerStorageError.unavailable(commitOutcomeUnknown: e.commitOutcomeUnknown)
        }
    }
}
#endif
