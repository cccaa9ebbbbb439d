import Foundation
import HTTPServer
import LedgerCore
import LedgerModel
import LedgerStorageSQLite
import StoreKitJWS

/// The kidledger server: storage, routes and the HTTP listener, started and stopped as one.
public final class LedgerApp: Sendable {
    public let configuration: LedgerAppConfiguration
    let services: Services
    /// Routes each request and runs its handler (also without a socket: `answer`).
    let handler: AppHandler
    private let server: HTTPServer
    /// Pays due schedules (at start, then every `scheduleJobInterval` seconds).
    package let scheduleJob: ScheduleJob

    /// The storage the app runs over (benchmarks and admin tools).
    package var storage: any LedgerStorage { services.storage }

    /// Opens (creating and migrating) the database and prepares the listener.
    public init(configuration: LedgerAppConfiguration) throws {
        self.configuration = configuration
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        OpenSSLRuntime.initialize()
        let notifier = ChangeNotifier()
        let metrics = Metrics()
        let logger = Logger(level: configuration.logging ? (Logger.Level(rawValue: configuration.logLevel) ?? .info) : .none)
        if let problem = configuration.pushProblem { throw AdminCommands.Failure(description: problem) }
        let push = configuration.pushGateways.isEmpty ? nil : PushWakeSender(configuration: configuration, logger: logger)
        let readCache: ReadCache
        let backend: StorageBackend
        if let url = configuration.databaseURL {
            readCache = ReadCache(tokenLifetime: LedgerApp.tokenLifetimeWithSeveralProcesses)
            backend = try LedgerApp.openPostgres(url: url, configuration, notifier: notifier, readCache: readCache,
                                                 metrics: metrics, logger: logger, push: push)
        } else {
            readCache = ReadCache()
            backend = try LedgerApp.openSQLite(configuration, notifier: notifier, readCache: readCache,
                                               metrics: metrics, logger: logger, push: push)
        }
        // Without a gateway, commits queue no wakes (nobody would send them).
        backend.storage.pushWakes.set(push != nil)
        let subscriptions = try SubscriptionService.make(configuration)
        let identity: IdentityService
        do { identity = try IdentityService(configuration: configuration, storage: backend.storage, logger: logger) } catch {
            backend.stop()
            throw error
        }
        let services = Services(configuration: configuration, backend: backend, readCache: readCache,
                                notifier: notifier, metrics: metrics, logger: logger, subscriptions: subscriptions,
                                entitlementKeys: try EntitlementKeys(dataDirectory: configuration.dataDirectory),
                                identity: identity, push: push)
        self.services = services
        self.scheduleJob = ScheduleJob(storage: backend.storage, clock: configuration.clock,
                                       interval: configuration.scheduleJobInterval, logger: logger)
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
        self.handler = handler
        self.server = HTTPServer(configuration: http, handler: handler)
        let server = self.server
        services.connections.set { server.openConnections }
        services.refusedConnections.set { server.refusedConnections }
    }

    /// Longest time a token lookup is kept in memory when other processes may revoke the
    /// token (PostgreSQL), in seconds.
    static let tokenLifetimeWithSeveralProcesses = 0.5

    /// What a durable commit means to this process, whichever process made it (called before
    /// this process answers any of its writes): every kept GET answer is stale (those kept
    /// by stamp: the touched households'), and every remembered token too when one was
    /// revoked; the long-polls of the households it touched and of the tokens it revoked wake.
    static func apply(_ commit: StorageCommit, readCache: ReadCache, notifier: ChangeNotifier, push: PushWakeSender?) {
        readCache.invalidate(tokens: !commit.revokedTokens.isEmpty)
        readCache.forget(households: commit.touched)
        if !commit.revokedTokens.isEmpty { notifier.notify(tokens: commit.revokedTokens) }
        if !commit.touched.isEmpty { notifier.notify(commit.touched) }
        push?.committed(commit)
    }

    /// SQLite in the data folder: one writer thread with group commit, the checkpointer,
    /// read connections; short requests run on the event loops.
    static func openSQLite(_ configuration: LedgerAppConfiguration, notifier: ChangeNotifier, readCache: ReadCache,
                           metrics: Metrics, logger: Logger, push: PushWakeSender?) throws -> StorageBackend {
        let options = SQLiteLedgerStorage.Options(dataDirectory: configuration.dataDirectory,
                                                  databasePath: configuration.databasePath,
                                                  writerCacheBytes: configuration.writerCacheBytes,
                                                  readerMmapBytes: configuration.readerMmapBytes,
                                                  writerCPU: configuration.writerCPU)
        let storage = try SQLiteLedgerStorage.open(options, log: { logger.log($0) }) { commit in
            metrics.recordCommit(jobs: commit.writes)
            apply(commit, readCache: readCache, notifier: notifier, push: push)
        }
        return StorageBackend(storage: storage, workers: DispatchWorkers(queue: storage.reads.queue), offLoop: false,
                              stop: { storage.stop() })
    }

    #if !Postgres
    static func openPostgres(url: String, _ configuration: LedgerAppConfiguration, notifier: ChangeNotifier,
                             readCache: ReadCache, metrics: Metrics, logger: Logger, push: PushWakeSender?) throws -> StorageBackend {
        throw AdminCommands.Failure(description: AdminCommands.noPostgresSupport)
    }
    #endif

    /// Starts listening and logs `{"event":"listening",…}`.
    public func start() throws {
        startServices()
        try server.start()
        services.logger.log(["event": "listening", "host": .string(configuration.http.host), "port": .int(Int64(server.port)),
                             "maxConnections": .int(Int64(configuration.http.maxConnections)),
                             "maxConnectionsPerAddress": .int(Int64(configuration.http.maxConnectionsPerAddress))])
    }

    /// What runs beside the listener: storage ready, identity keys loaded, the Apple
    /// revocation outbox running (`start` and `startInProcess`).
    func startServices() {
        services.backend.waitUntilReady(5)
        // List cursors name the database's incarnation (feed reads keep it current).
        if let database = try? services.storage.read({ try $0.databaseIncarnation() }) {
            services.cursors.observe(database: database)
        }
        services.identity?.start()
        services.push?.start(storage: services.storage)
        scheduleJob.start()
    }

    /// The bound port.
    public var port: Int { server.port }

    /// Graceful stop: long-polls are answered, in-flight requests finish, the writer drains.
    public func stop() {
        // Parked long-polls are answered after the server has begun shutting down, so
        // their answers carry `Connection: close`.
        let notifier = services.notifier
        server.shutdown(beforeDraining: { notifier.shutdown() })
        notifier.shutdown()   // when the app answered in process only (no listener to drain)
        services.identity?.stop()
        services.push?.stop()
        scheduleJob.stop()
        services.backend.stop()
        services.logger.log(["event": "stopped"])
        services.logger.flush()
    }
}
