import Dispatch
import HTTPServer
import LedgerModel
import SQLiteKit

/// The shared machinery every handler uses.
final class Services: Sendable {
    let configuration: LedgerAppConfiguration
    /// Everything handlers read and write goes through this seam.
    let storage: any LedgerStorage
    let reads: ReadPool
    /// Token and GET answers valid until the next commit.
    let readCache: ReadCache
    let writer: WriteQueue
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

    func connectionCount() -> Int { connections.get(0) }

    /// Where work that may wait for storage runs, off the event loops (handlers that read
    /// or write a lot, woken long-polls).
    var workers: DispatchQueue { reads.queue }

    init(configuration: LedgerAppConfiguration, reads: ReadPool, readCache: ReadCache, writer: WriteQueue,
         notifier: ChangeNotifier, metrics: Metrics, logger: Logger, subscriptions: SubscriptionService?,
         entitlementKeys: EntitlementKeys) {
        self.configuration = configuration
        self.reads = reads
        self.storage = SQLiteLedgerStorage(reads: reads, writer: writer)
        self.readCache = readCache
        self.writer = writer
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
    }

    /// Maps any error to its problem+json answer; unexpected errors are logged and become 500.
    static func problem(for error: Error, logger: Logger) -> HTTPResponse {
        if let e = error as? APIError { return e.response }
        if let e = error as? LedgerStorageError { return e.apiError.response }
        if let e = error as? SQLiteError, e.isBusy {
            var p = APIError(503, "service_unavailable", "The database is busy; retry shortly.")
            p.headers.set("Retry-After", "1")
            return p.response
        }
        if let e = error as? SQLiteError, e.isFull { return APIError.insufficientStorage.response }
        logger.log(["event": .string("error"), "error": .string(String(describing: error))])
        return APIError.internal().response
    }
}
