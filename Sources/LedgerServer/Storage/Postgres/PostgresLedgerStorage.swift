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
    private let writes = DispatchQueue(label: "kidledger.pg.write", qos: .userInitiated, attributes: .concurrent)
    /// Called after every durable commit that touched a household or revoked a token (after
    /// the write was answered).
    private let onCommit: @Sendable (StorageCommit) -> Void
    /// How many times a write lost to a concurrent one runs again before it fails.
    static let maxAttempts = 8
    /// Other processes commit too: nothing read may be kept past its request.
    var cachesReads: Bool { false }
    /// Space on the database server is not tracked by this process.
    var isOutOfSpace: Bool { false }

    init(url: String, connections: Int = 16, setup: [String] = [],
         onCommit: @escaping @Sendable (StorageCommit) -> Void = { _ in }) {
        pool = PGPool(url: url, size: connections, setup: setup)
        self.onCommit = onCommit
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
        writes.async { [self] in
            switch Result(catching: { try run(body) }) {
            case .success(let (value, commit)):
                completion(.success(value))
                if !commit.isEmpty { onCommit(commit) }
            case .failure(let e):
                completion(.failure(e))
            }
        }
    }

    /// Runs `body` in a write transaction on the calling thread, again after a lost race.
    func writeNow<T>(_ body: (any LedgerWriting) throws -> T) throws -> T {
        let (value, commit) = try run(body)
        if !commit.isEmpty { onCommit(commit) }
        return value
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

    /// Database unavailability becomes the domain's `unavailable`; everything else passes.
    private static func mapped<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as PGError where e.isUnavailable {
            throw LedgerStorageError.unavailable(commitOutcomeUnknown: e.commitOutcomeUnknown)
        }
    }
}
#endif
