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

    /// `sessionSetup` for a pool behind a transaction-mode pooler: a setting made once per
    /// session would stay on whichever server session ran it, so each transaction makes its own.
    package static var transactionSetup: [String] {
        ["SET LOCAL statement_timeout = \(statementTimeout * 1000)",
         "SET LOCAL idle_in_transaction_session_timeout = \(statementTimeout * 3000)",
         "SET LOCAL client_min_messages = warning"]
    }

    /// Storage for one serving process: `connections` sessions (writes run on `workers`),
    /// the schema migrated (once, whichever process gets there first, on a session of its
    /// own without the statement timeout: a migration may rewrite a large table), and the
    /// change bus started. `log` gets `migrated`.
    ///
    /// With a `directURL`, `url` is a pooler in transaction mode (pgbouncer): requests' sessions
    /// and notifications go through it, LISTEN and the migration (its advisory lock) go to
    /// `directURL`. Whichever URL must reach PostgreSQL itself is checked to (a pooler is
    /// refused with what to configure instead).
    package static func open(url: String, directURL: String? = nil, connections: Int, workers: any RequestWorkers,
                             hooks: CommitHooks, log: (JSONObject) -> Void) throws -> PostgresLedgerStorage {
        let pooled = directURL != nil
        let sessionURL = directURL ?? url
        if pooled {
            do {
                _ = try PGConnection(url: url, pooled: true, application: application, connectTimeout: connectTimeout).query("SELECT 1")
            } catch {
                throw StorageFailure("PostgreSQL through \(redacted(url)): \(error.message)")
            }
        }
        let applied: [Int]
        do {
            let session = try PGConnection(url: sessionURL, application: application, connectTimeout: connectTimeout)
            guard try session.reachesServerDirectly() else {
                throw StorageFailure(poolerRefusal(url: sessionURL, direct: pooled))
            }
            applied = try PostgresSchema.migrate(session)
        } catch let e as PGError {
            // pgbouncer refuses the startup parameter `options` that sessions of PostgreSQL's own carry.
            if e.message.contains("unsupported startup parameter") {
                throw StorageFailure(poolerRefusal(url: sessionURL, direct: pooled))
            }
            throw StorageFailure("PostgreSQL at \(redacted(sessionURL)): \(e.message)")
        } catch let e as StorageFailure {
            throw e
        } catch {
            throw StorageFailure("PostgreSQL at \(redacted(sessionURL)): \(error)")
        }
        let publisher = pooled ? PGPool(url: url, size: 2, pooled: true, application: application, connectTimeout: 2,
                                        answerTimeout: 3, acquireTimeout: 2) : nil
        let bus = PostgresChangeBus(url: sessionURL, publisher: publisher,
                                    onRemote: hooks.remote, onResync: hooks.resynced, onDisconnect: hooks.disconnected)
        let storage = PostgresLedgerStorage(url: url, connections: connections, setup: pooled ? [] : sessionSetup,
                                            transactionSetup: pooled ? transactionSetup : [], pooled: pooled,
                                            acquireTimeout: connectionWait, connectTimeout: connectTimeout,
                                            answerTimeout: answerTimeout, workers: workers, onCommit: hooks.local,
                                            announce: { bus.publish($0) }, bus: bus)
        if !applied.isEmpty { log(["event": "migrated", "applied": .array(applied.map { .int(Int64($0)) })]) }
        bus.start()
        return storage
    }

    /// Why a URL that reaches a connection pooler cannot serve where PostgreSQL itself is needed.
    static func poolerRefusal(url: String, direct: Bool) -> String {
        let which = direct ? "--database-direct-url" : "--database-url"
        return "\(which) \(redacted(url)) reaches a connection pooler (such as pgbouncer), not PostgreSQL itself: "
            + "LISTEN (wake-ups across processes) and the migration lock need a session of PostgreSQL's own. "
            + (direct ? "Give PostgreSQL's own address as --database-direct-url."
                      : "Give the pooler's address (transaction pooling) as --database-url "
                        + "and PostgreSQL's own as --database-direct-url.")
            + " See docs/scaling.md."
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
        // Not URLComponents: a URL with several hosts (`h1:5432,h2:5432`) is not one it reads.
        guard let scheme = url.range(of: "://"), let at = url[scheme.upperBound...].firstIndex(of: "@"),
              let colon = url[scheme.upperBound..<at].firstIndex(of: ":") else { return url }
        return String(url[..<url.index(after: colon)]) + "***" + String(url[at...])
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
