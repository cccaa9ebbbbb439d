#if Postgres
import Foundation
import PostgresKit

extension LedgerApp {
    /// Seconds a request waits for a free database connection before it is answered 503.
    static let connectionWait = 5.0
    /// Seconds one statement may run before PostgreSQL cancels it (the request is 503).
    static let statementTimeout = 10
    /// Seconds libpq waits for a new connection (its minimum is 2).
    static let connectTimeout = 3
    /// Seconds the server waits for any answer of PostgreSQL before it gives the session up
    /// (a host that froze or a route that vanished, where no timeout of the server fires).
    static let answerTimeout = Double(statementTimeout + 5)

    /// What every session of the server's pools runs first: bounds on each statement and on
    /// a transaction left idle (a process stopped halfway cannot hold its locks for long).
    static var sessionSetup: [String] {
        ["SET statement_timeout = \(statementTimeout * 1000)",
         "SET idle_in_transaction_session_timeout = \(statementTimeout * 3000)"]
    }

    /// PostgreSQL: migrates (once, whichever process comes first), runs every handler that
    /// touches storage on a fixed set of worker threads, and wires the change bus to this
    /// process's long-polls and token cache so commits of other processes reach them.
    static func openPostgres(url: String, _ configuration: LedgerAppConfiguration, notifier: ChangeNotifier,
                             readCache: ReadCache, metrics: Metrics, logger: Logger) throws -> StorageBackend {
        if let problem = LedgerAppConfiguration.databaseURLProblem(url) {
            throw AdminCommands.Failure(description: "--database-url " + problem)
        }
        let connections = max(1, configuration.databaseConnections)
        let workers = WorkerPool(name: "kl-worker", threads: connections, maxQueued: 4096)
        // What a commit means to this process, whichever process made it.
        let apply: @Sendable (StorageCommit) -> Void = { commit in
            if !commit.revokedTokens.isEmpty {
                readCache.invalidate(tokens: true)
                notifier.notify(tokens: commit.revokedTokens)
            }
            if !commit.touched.isEmpty { notifier.notify(commit.touched) }
        }
        let bus = PostgresChangeBus(url: url, onRemote: apply, onResync: {
            // Commits announced while nobody listened are lost: every waiter looks again and
            // token lookups are read afresh.
            readCache.bypassTokens = false
            readCache.invalidate(tokens: true)
            notifier.notifyEveryone()
            logger.log(["event": "change_bus_listening"])
        }, onDisconnect: {
            readCache.bypassTokens = true
            logger.log(["event": "change_bus_disconnected"])
        })
        readCache.bypassTokens = true
        let storage = PostgresLedgerStorage(url: url, connections: connections, setup: sessionSetup,
                                            acquireTimeout: connectionWait, connectTimeout: connectTimeout,
                                            answerTimeout: answerTimeout, workers: workers, onCommit: { commit in
            metrics.recordCommit(jobs: 1)
            apply(commit)
        }, announce: { bus.publish($0) })
        let applied: [Int]
        do {
            // On a session of its own, without the request path's statement timeout (a
            // migration may rewrite a large table).
            applied = try PostgresSchema.migrate(PGConnection(url: url, connectTimeout: connectTimeout))
        } catch let e as PGError {
            workers.stop()
            throw AdminCommands.Failure(description: "PostgreSQL at \(redacted(url)): \(e.message)")
        } catch {
            workers.stop()
            throw AdminCommands.Failure(description: "PostgreSQL at \(redacted(url)): \(error)")
        }
        if !applied.isEmpty {
            logger.log(["event": "migrated", "applied": .array(applied.map { .int(Int64($0)) })])
        }
        bus.start()
        // A short probe on a connection of its own: readiness never waits behind requests.
        let probe = PGPool(url: url, size: 1, setup: ["SET statement_timeout = 2000"], connectTimeout: 2, answerTimeout: 2,
                           acquireTimeout: 2)
        return StorageBackend(storage: storage, sqlite: nil, workers: workers, offLoop: true, readiness: {
            guard (try? probe.with({ try $0.queryOne("SELECT 1 FROM schema_version LIMIT 1") })) != nil else {
                var e = APIError(503, "not_ready", "The database does not answer.")
                e.headers.set("Retry-After", "1")
                return e
            }
            guard bus.isListening else {
                var e = APIError(503, "not_ready", "Changes made through other server processes are not being received.")
                e.headers.set("Retry-After", "1")
                return e
            }
            return nil
        }, waitUntilReady: { seconds in bus.waitUntilListening(seconds: seconds) }, stop: {
            workers.stop()
            bus.stop()
            storage.pool.closeIdle()
            probe.closeIdle()
        })
    }

    /// `url` without its password, for messages.
    static func redacted(_ url: String) -> String {
        guard var parts = URLComponents(string: url), parts.password != nil else { return url }
        parts.password = "***"
        return parts.string ?? url
    }
}
#endif

extension LedgerAppConfiguration {
    /// Why `url` cannot name the PostgreSQL database (nil: it can): it must be a
    /// `postgres://` or `postgresql://` URL that libpq reads, and this build must have the
    /// `Postgres` trait.
    public static func databaseURLProblem(_ url: String) -> String? {
        #if Postgres
        guard url.hasPrefix("postgres://") || url.hasPrefix("postgresql://") else {
            return "must be a postgres:// URL such as postgres://user:password@host:5432/kidledger, got \(url.prefix(40))"
        }
        if let reason = PGConnection.invalidReason(url: url) { return "is not a valid PostgreSQL URL: \(reason)" }
        return nil
        #else
        return "needs PostgreSQL support, but " + AdminCommands.noPostgresSupport
        #endif
    }
}
