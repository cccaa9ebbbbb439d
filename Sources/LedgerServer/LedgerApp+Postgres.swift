#if Postgres
import LedgerCore
import LedgerModel
import LedgerStoragePostgres

extension LedgerApp {
    /// PostgreSQL: migrates (once, whichever process comes first), runs every handler that
    /// touches storage on a fixed set of worker threads, and wires the change bus to this
    /// process's long-polls and token cache so commits of other processes reach them.
    static func openPostgres(url: String, _ configuration: LedgerAppConfiguration, notifier: ChangeNotifier,
                             readCache: ReadCache, metrics: Metrics, logger: Logger, push: PushWakeSender?) throws -> StorageBackend {
        if let problem = LedgerAppConfiguration.databaseURLProblem(url) {
            throw AdminCommands.Failure(description: "--database-url " + problem)
        }
        let connections = max(1, configuration.databaseConnections)
        let workers = WorkerPool(name: "kl-worker", threads: connections, maxQueued: 4096)
        let hooks = PostgresLedgerStorage.CommitHooks(local: { commit in
            metrics.recordCommit(jobs: commit.writes)
            apply(commit, readCache: readCache, notifier: notifier, push: push)
        }, remote: { commit in apply(commit, readCache: readCache, notifier: notifier, push: push) }, resynced: {
            // Commits announced while nobody listened are lost: every waiter looks again and
            // token lookups are read afresh.
            readCache.bypassTokens = false
            readCache.invalidate(tokens: true)
            notifier.notifyEveryone()
            logger.log(["event": "change_bus_listening"])
        }, disconnected: {
            readCache.bypassTokens = true
            logger.log(["event": "change_bus_disconnected"])
        })
        readCache.bypassTokens = true
        let storage: PostgresLedgerStorage
        do {
            storage = try PostgresLedgerStorage.open(url: url, directURL: configuration.databaseDirectURL,
                                                     connections: connections, workers: workers, hooks: hooks,
                                                     log: { logger.log($0) })
        } catch {
            workers.stop()
            throw error
        }
        return StorageBackend(storage: storage, workers: workers, offLoop: true, waitUntilReady: { seconds in storage.waitUntilListening(seconds: seconds) }, stop: {
            workers.stop()
            storage.stop()
        })
    }
}
#endif

extension LedgerAppConfiguration {
    /// Why `url` cannot name the PostgreSQL database (nil: it can): it must be a
    /// `postgres://` or `postgresql://` URL that libpq reads, and this build must have the
    /// `Postgres` trait.
    public static func databaseURLProblem(_ url: String) -> String? {
        #if Postgres
        return PostgresLedgerStorage.urlProblem(url)
        #else
        return "needs PostgreSQL support, but " + AdminCommands.noPostgresSupport
        #endif
    }
}
