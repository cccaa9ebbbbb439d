import Foundation
import HTTPServer
import LedgerModel
import SQLiteKit
import SQLiteServerKit
import StoreKitJWS

/// The kidledger server: storage, routes and the HTTP listener, started and stopped as one.
public final class LedgerApp: Sendable {
    public let configuration: LedgerAppConfiguration
    let services: Services
    private let server: HTTPServer

    /// Opens (creating and migrating) the database and prepares the listener.
    public init(configuration: LedgerAppConfiguration) throws {
        self.configuration = configuration
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        OpenSSLRuntime.initialize()
        let notifier = ChangeNotifier()
        let metrics = Metrics()
        let logger = Logger(level: configuration.logging ? (Logger.Level(rawValue: configuration.logLevel) ?? .info) : .none)
        let readCache: ReadCache
        let backend: StorageBackend
        if let url = configuration.databaseURL {
            readCache = ReadCache(tokenLifetime: LedgerApp.tokenLifetimeWithSeveralProcesses)
            backend = try LedgerApp.openPostgres(url: url, configuration, notifier: notifier, readCache: readCache,
                                                 metrics: metrics, logger: logger)
        } else {
            readCache = ReadCache()
            backend = try LedgerApp.openSQLite(configuration, notifier: notifier, readCache: readCache,
                                               metrics: metrics, logger: logger)
        }
        let subscriptions = try SubscriptionService.make(configuration)
        let identity: IdentityService
        do { identity = try IdentityService(configuration: configuration, storage: backend.storage, logger: logger) } catch {
            backend.stop()
            throw error
        }
        let services = Services(configuration: configuration, backend: backend, readCache: readCache,
                                notifier: notifier, metrics: metrics, logger: logger, subscriptions: subscriptions,
                                entitlementKeys: try EntitlementKeys(dataDirectory: configuration.dataDirectory),
                                identity: identity)
        self.services = services
        var http = configuration.http
        http.problemTypePrefix = Problem.typePrefix
        let accessLines = logger.accessLines
        http.accessLog = { entry in
            let route = entry.routeLabel ?? "unmatched"
            metrics.record(route: route, routeIndex: entry.routeIndex, method: entry.method, status: entry.status,
                           seconds: entry.duration)
            if accessLines { AccessLine.log(entry, route: route, to: logger) }
        }
        if !configuration.trustedProxies.isEmpty {
            // A trusted proxy carries many clients over its connections.
            let proxies = ClientAddress(trusted: configuration.trustedProxies)
            http.exemptFromAddressLimit = { proxies.isTrusted($0) }
        }
        http.connectionsRefused = { report in
            var counts = JSONObject(), last = JSONObject()
            for (reason, n) in report.counts.sorted(by: { $0.key.rawValue < $1.key.rawValue }) { counts[reason.rawValue] = .int(Int64(n)) }
            for (reason, a) in report.lastAddress.sorted(by: { $0.key.rawValue < $1.key.rawValue }) { last[reason.rawValue] = .string(a) }
            logger.log(["event": "connections_refused", "refused": .object(counts), "lastAddress": .object(last),
                        "seconds": .int(Int64(report.seconds.rounded()))])
        }
        let handler = AppHandler(services: services, router: Routes.make(),
                                 staticFiles: StaticFiles(root: configuration.publicDirectory))
        self.server = HTTPServer(configuration: http, handler: handler)
        let server = self.server
        services.connections.set { server.openConnections }
        services.refusedConnections.set { server.refusedConnections }
    }

    /// Longest time a token lookup is kept in memory when other processes may revoke the
    /// token (PostgreSQL), in seconds.
    static let tokenLifetimeWithSeveralProcesses = 0.5

    /// SQLite in the data folder: one writer thread with group commit, the checkpointer,
    /// read connections; short requests run on the event loops.
    static func openSQLite(_ configuration: LedgerAppConfiguration, notifier: ChangeNotifier, readCache: ReadCache,
                           metrics: Metrics, logger: Logger) throws -> StorageBackend {
        // Released by `stop`, or when the lock object goes (a throw below drops it).
        let lock = try DataFolderLock(directory: configuration.dataDirectory)
        let db = try LedgerApp.openWriter(configuration, logger: logger)
        let started = DispatchTime.now().uptimeNanoseconds
        // On a connection of its own: the scan's pages would otherwise fill the writer's cache.
        let keys = try TransactionKeys.load(SQLiteConnection(path: configuration.databasePath, mode: .readOnly))
        let ms = Int64((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000)
        if ms >= 1000 {   // a start that waits on it says so (about a second per 2 million)
            logger.log(["event": "indexed", "transactions": .int(Int64(keys.count)), "ms": .int(ms)])
        }
        let checkpointer = try Checkpointer(path: configuration.databasePath)
        let placement = configuration.writerCPU == .any ? nil : WriterPlacement(configuration.writerCPU, dataDirectory: configuration.dataDirectory) { decision, refused in
            var line: JSONObject = ["event": "writer_cpu", "reason": .string(decision.reason)]
            line["cpus"] = decision.cpus.map { .string(CPUList.format($0)) } ?? .string("any")
            if let refused { line["error"] = .string(String(cString: strerror(refused))) }
            logger.log(line)
        }
        let writer = WriteQueue(connection: db, checkpointer: checkpointer, batchState: WriterRowState(), placement: placement,
                                afterEveryCommit: { commit in
            readCache.invalidate(tokens: commit.revokedTokens)
            metrics.recordCommit(jobs: commit.jobs)
        }, onSpace: { full in
            if let full {
                logger.log(["event": "storage_full", "error": .string(full.description)])
            } else {
                logger.log(["event": "storage_recovered"])
            }
        }) { touched in notifier.notify(touched) }
        let reads = ReadPool(path: configuration.databasePath, mmapBytes: configuration.readerMmapBytes)
        let storage = SQLiteLedgerStorage(reads: reads, writer: writer, keys: keys)
        return StorageBackend(storage: storage, sqlite: SQLiteBackend(reads: reads, writer: writer),
                              workers: DispatchWorkers(queue: reads.queue), offLoop: false, readiness: {
            if storage.isOutOfSpace {
                var e = APIError(503, "not_ready", "The disk is full: writes fail until there is room again.")
                e.headers.set("Retry-After", "10")
                return e
            }
            do {
                _ = try storage.read { try $0.schemaVersion() }
                return nil
            } catch {
                return APIError(503, "not_ready", "The database does not answer.")
            }
        }, stop: {
            writer.stop()
            lock.release()
        })
    }

    #if !Postgres
    static func openPostgres(url: String, _ configuration: LedgerAppConfiguration, notifier: ChangeNotifier,
                             readCache: ReadCache, metrics: Metrics, logger: Logger) throws -> StorageBackend {
        throw AdminCommands.Failure(description: AdminCommands.noPostgresSupport)
    }
    #endif

    /// The page size of a database the server creates, in bytes. Each page a commit changes
    /// is written whole to the WAL and later copied whole into the database file by the
    /// checkpointer: with 2 KiB pages instead of SQLite's 4 KiB those copies halve, which
    /// measured about 10 % less server CPU per durable POST when every insert also landed
    /// in a random leaf of an id index; without that index (schema version 8) 4 KiB pages
    /// still cost the writer 4–12 % more instructions per POST. The trees stay shallow (a
    /// transaction row is ~250 bytes). A database created with another page size keeps it.
    static let newDatabasePageSize = 2048

    /// Opens the read-write connection and applies migrations; with a logger, logs
    /// `{"event":"migrated","versions":[…],"ms":…}` when it applied any (some rewrite the
    /// ledger: version 6 took about 14 s for 1.2 million transactions).
    static func openWriter(_ configuration: LedgerAppConfiguration, logger: Logger? = nil) throws -> SQLiteConnection {
        // A group commit's WAL frames reach the file in one write, then the usual fsync.
        let db = try SQLiteConnection.coalescingWALWriter(path: configuration.databasePath,
                                                          newFilePageSize: newDatabasePageSize)
        let started = DispatchTime.now().uptimeNanoseconds
        let applied = try Migrator.migrate(db, Schema.migrations)
        if let logger, !applied.isEmpty {
            logger.log(["event": "migrated", "versions": .array(applied.map { .int(Int64($0)) }),
                        "ms": .int(Int64((DispatchTime.now().uptimeNanoseconds - started) / 1_000_000))])
        }
        try db.execute("PRAGMA wal_autocheckpoint = 0")
        // Inserts into tables with foreign keys need a statement journal, and a batch that
        // runs again with a savepoint per job a savepoint journal: keep both in memory. On
        // disk they were a temporary file created, written and unlinked in every group
        // commit once they outgrew 64 KiB.
        try db.execute("PRAGMA temp_store = MEMORY")
        // More than SQLite's 2 MiB, so that the pages every write touches (the ends of the
        // ledger's indexes, children and households rows) stay (`writerCacheBytes`).
        try db.execute("PRAGMA cache_size = -\(max(configuration.writerCacheBytes >> 10, 64))")
        return db
    }

    /// Starts listening and logs `{"event":"listening",…}`.
    public func start() throws {
        services.backend.waitUntilReady(5)
        services.identity?.start()
        try server.start()
        services.logger.log(["event": "listening", "host": .string(configuration.http.host), "port": .int(Int64(server.port)),
                             "maxConnections": .int(Int64(configuration.http.maxConnections)),
                             "maxConnectionsPerAddress": .int(Int64(configuration.http.maxConnectionsPerAddress))])
    }

    /// The bound port.
    public var port: Int { server.port }

    /// Graceful stop: long-polls are answered, in-flight requests finish, the writer drains.
    public func stop() {
        // Parked long-polls are answered after the server has begun shutting down, so
        // their answers carry `Connection: close`.
        let notifier = services.notifier
        server.shutdown(beforeDraining: { notifier.shutdown() })
        services.identity?.stop()
        services.backend.stop()
        services.logger.log(["event": "stopped"])
        services.logger.flush()
    }
}
