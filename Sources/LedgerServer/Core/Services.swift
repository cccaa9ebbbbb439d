import Dispatch
import HTTPServer
import LedgerCore
import LedgerModel

/// The storage a server runs over, with what depends on which one it is.
struct StorageBackend: Sendable {
    let storage: any LedgerStorage
    /// Where handlers run off the event loops.
    let workers: any RequestWorkers
    /// Whether every handler that touches storage must run off the event loops (PostgreSQL:
    /// each answer waits for a network round trip). With SQLite short reads and small
    /// writes run on the loop.
    let offLoop: Bool
    /// Waits (up to the given seconds) until what runs beside the storage is up: with
    /// PostgreSQL, the change bus's listening connection.
    var waitUntilReady: @Sendable (Double) -> Void = { _ in }
    /// Stops what the backend runs (after the HTTP server has drained).
    let stop: @Sendable () -> Void
}

/// The shared machinery every handler uses.
final class Services: Sendable {
    let configuration: LedgerAppConfiguration
    /// Everything handlers read and write goes through this seam.
    let storage: any LedgerStorage
    let backend: StorageBackend
    /// Token lookups (and, with SQLite, GET answers) valid until the next commit.
    let readCache: ReadCache
    let notifier: ChangeNotifier
    let metrics: Metrics
    let logger: Logger
    let authLimiter: AuthLimiter
    let subscriptions: SubscriptionService?
    /// The keys that sign entitlement tokens.
    let entitlementKeys: EntitlementKeys
    /// Counts App Store notification requests per client address.
    let notificationLimiter: AuthLimiter
    /// Open HTTP connections, bound once the listener exists.
    let connections = LateBound<Int>()
    /// Refused HTTP connections so far, by reason, bound once the listener exists.
    let refusedConnections = LateBound<[ConnectionRefusalReason: Int]>()
    let clientAddress: ClientAddress
    /// Encrypts and authenticates list cursors.
    let cursors: Cursor
    let registrationLimiter: RegistrationLimiter
    /// Counts invitations to handles that found no account, per inviting account.
    let handleLookupLimiter: HandleLookupLimiter
    /// Sign-in with OpenID Connect identities; nil only where a server is made without it.
    let identity: IdentityService?
    /// The push wake sender; nil when no push gateway is configured (push is off).
    let push: PushWakeSender?
    /// Requests made per child token (`RequestRoutes.create`).
    let childRequestLimiter: WindowLimiter
    /// The link-code and recovery limits this process has seen refuse (`AttemptGate`).
    let accountAccessGate = AttemptGate()

    func connectionCount() -> Int { connections.get(0) }

    /// The clock schedules are settled by (`LedgerAppConfiguration.clock`), in milliseconds.
    func now() -> Int64 { configuration.clock() }

    /// Where work that may wait for storage runs, off the event loops (handlers that read
    /// or write a lot, woken long-polls; over PostgreSQL every handler that touches storage).
    var workers: any RequestWorkers { backend.workers }

    /// Runs `work` off the event loops; false when the workers' backlog is full.
    func offLoop(_ work: @escaping @Sendable () -> Void) -> Bool { backend.workers.submit(work) }

    init(configuration: LedgerAppConfiguration, backend: StorageBackend, readCache: ReadCache,
         notifier: ChangeNotifier, metrics: Metrics, logger: Logger, subscriptions: SubscriptionService?,
         entitlementKeys: EntitlementKeys, identity: IdentityService? = nil, push: PushWakeSender? = nil) {
        self.push = push
        self.configuration = configuration
        self.backend = backend
        self.storage = backend.storage
        self.readCache = readCache
        self.notifier = notifier
        self.metrics = metrics
        self.logger = logger
        self.authLimiter = AuthLimiter(limit: configuration.authFailuresPerMinute)
        self.subscriptions = subscriptions
        self.entitlementKeys = entitlementKeys
        self.notificationLimiter = AuthLimiter(limit: configuration.notificationsPerMinute)
        self.clientAddress = ClientAddress(trusted: configuration.trustedProxies)
        self.cursors = Cursor(directory: configuration.dataDirectory)
        self.registrationLimiter = RegistrationLimiter(perHour: configuration.registrationsPerHour)
        self.handleLookupLimiter = HandleLookupLimiter(limit: configuration.failedHandleLookupsPerMinute)
        self.identity = identity
        self.childRequestLimiter = WindowLimiter(limit: configuration.childRequestsPerHour, seconds: 3600)
    }

    /// Maps any error to its problem+json answer (storage's refusals as
    /// `LedgerStorageError+HTTP.swift` says); unexpected errors are logged and become 500.
    static func problem(for error: Error, logger: Logger) -> HTTPResponse {
        if let e = error as? APIError { return e.response }
        if let e = error as? LedgerStorageError { return e.apiError.response }
        if let e = error as? AccountAccessError { return e.apiError.response }
        logger.log(["event": .string("error"), "error": .string(String(describing: error))])
        return APIError.internal().response
    }
}
