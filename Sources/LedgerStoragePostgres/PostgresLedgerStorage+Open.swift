#if Postgres
import Foundation
import LedgerCore
import LedgerModel
import PostgresKit

/// Opening PostgreSQL storage for one serving process among several.
extension PostgresLedgerStorage {
    /// Seconds a request waits for a free database connection before it is answered 503.
    package static let connectionWait = 5.0
    /// Seconds one statement may run before PostgreSQL cancels it (the request is 503).
    package static let statementTimeout = 10
    /// Seconds libpq waits for a new connection (its minimum is 2).
    package static let connectTimeout = 3
    /// Seconds the server waits for any answer of PostgreSQL before it gives the session up
    /// (a host that froze or a route that vanished, where no timeout of the server fires).
    package static let answerTimeout = Double(statementTimeout + 5)

    /// What every session of the server's pools runs first: bounds on each statement and on
    /// a transaction left idle (a process stopped halfway cannot hold its locks for long).
    package static var sessionSetup: [String] {
        ["SET statement_timeout = \(statementTimeout * 1000)",
         "SET idle_in_transaction_session_timeout = \(statementTimeout * 3000)"]
    }

    /// What a serving process hears of commits: its own (`local`, before the write is
    /// answered) and other processes' (`remote`, through the change bus), the bus starting
    /// to listen again after commits may have gone unannounced (`resynced`), and the bus
    /// losing its connection (`disconnected`).
    package struct CommitHooks: Sendable {
        package var local: @Sendable (StorageCommit) -> Void
        package var remote: @Sendable (StorageCommit) -> Void
        package var resynced: @Sendable () -> Void
        package var disconnected: @Sendable () -> Void

        package init(local: @escaping @Sendable (StorageCommit) -> Void, remote: @escaping @Sendable (StorageCommit) -> Void,
                     resynced: @escaping @Sendable () -> Void, disconnected: @escaping @Sendable () -> Void) {
            (self.local, self.remote, self.resynced, self.disconnected) = (local, remote, resynced, disconnected)
        }
    }

    /// Storage for one serving process: `connections` sessions (writes run on `workers`),
    /// the schema migrated (once, whichever process gets there first, on a session of its
    /// own without the statement timeout: a migration may rewrite a large table), and the
    /// change bus started. `log` gets `migrated`.
    package static func open(url: String, connections: Int, workers: any RequestWorkers, hooks: CommitHooks,
                             log: (JSONObject) -> Void) throws -> PostgresLedgerStorage {
        let bus = PostgresChangeBus(url: url, onRemote: hooks.remote, onResync: hooks.resynced, onDisconnect: hooks.disconnected)
        let storage = PostgresLedgerStorage(url: url, connections: connections, setup: sessionSetup,
                                            acquireTimeout: connectionWait, connectTimeout: connectTimeout,
                                            answerTimeout: answerTimeout, workers: workers, onCommit: hooks.local,
                                            announce: { bus.publish($0) }, bus: bus)
        let applied: [Int]
        do {
            applied = try PostgresSchema.migrate(PGConnection(url: url, connectTimeout: connectTimeout))
        } catch let e as PGError {
            throw StorageFailure("PostgreSQL at \(redacted(url)): \(e.message)")
        } catch {
            throw StorageFailure("PostgreSQL at \(redacted(url)): \(error)")
        }
        if !applied.isEmpty { log(["event": "migrated", "applied": .array(applied.map { .int(Int64($0)) })]) }
        bus.start()
        return storage
    }

    /// The database answers a short query on a session of its own (never behind requests),
    /// and commits of other processes are being received.
    package func readiness() -> StorageReadiness {
        let answers = probe.map { probe in
            (try? probe.with({ try $0.queryOne("SELECT 1 FROM schema_version LIMIT 1") })) != nil
        } ?? ping()
        guard answers else { return .notAnswering(transient: true) }
        return bus?.isListening ?? true ? .ready : .changesNotHeard
    }

    /// Waits up to `seconds` for the change bus to listen.
    package func waitUntilListening(seconds: Double) {
        bus?.waitUntilListening(seconds: seconds)
    }

    /// Stops the change bus and closes idle sessions (after the workers have stopped).
    package func stop() {
        bus?.stop()
        pool.closeIdle()
        probe?.closeIdle()
    }

    /// `url` without its password, for messages.
    package static func redacted(_ url: String) -> String {
        guard var parts = URLComponents(string: url), parts.password != nil else { return url }
        parts.password = "***"
        return parts.string ?? url
    }

    /// Why `url` cannot name a PostgreSQL database (nil: it can): it must be a
    /// `postgres://` or `postgresql://` URL that libpq reads.
    package static func urlProblem(_ url: String) -> String? {
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else {
            return "must be a postgres:// URL such as postgres://user:password@host:5432/kidledger, got \(url.prefix(40))"
        }
        if let reason = PGConnection.invalidReason(url: url) { return "is not a valid PostgreSQL URL: \(reason)" }
        return nil
    }
}
#endif
