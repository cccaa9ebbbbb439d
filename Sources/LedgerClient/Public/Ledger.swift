import Foundation
import LedgerModel

/// A household ledger on this device: a local SQLite replica, the queue of changes waiting to
/// be uploaded, and the sync with a kidledger server. Every mutation is durable on disk when it
/// returns, online or not. Open one per store file and keep it for the life of the app; an
/// app extension may open its own on the same file.
public actor Ledger {
    /// Knobs for tests and tools; apps use the defaults.
    package struct Options: Sendable {
        package var scheduler = SyncScheduler.Configuration()
        /// Tries per request in `syncNow()` and the sharing and account calls.
        package var retry = RetryPolicy(maxAttempts: 3, baseDelay: 0.25, maxDelay: 2)
        /// How often a ledger with observers looks for writes of other connections to its file.
        package var watchInterval: Double = 0.2
        package var random: @Sendable () -> Double = { Double.random(in: 0..<1) }
        /// The device clock that stamps local changes, in milliseconds since the epoch.
        package var clock: @Sendable () -> Int64 = { Timestamp.nowMs() }
        /// The longest the allowance timer sleeps while automatic sync runs, in seconds (default 300).
        package var allowanceCheckInterval: Double = 300
        package init() {}
    }

    let path: String
    let credentials: any CredentialStore
    let options: Options
    let store: LedgerStore
    let service: LedgerService
    let transportOverride: (any Transport)?
    var lanes: (live: SyncLane, push: SyncLane)?
    var observers = Observers()
    /// Every event, in the order it happened: syncs add theirs from their lanes' threads, the
    /// ledger its own. One task hands them to observers, one at a time.
    let eventQueue: AsyncStream<QueuedEvent>.Continuation
    var scheduler: SyncScheduler
    var laneTasks: [SyncScheduler.Lane: Task<Void, Never>] = [:]
    var timer: Task<Void, Never>?
    /// Pays allowance as it falls due while automatic sync runs.
    var allowanceTimer: Task<Void, Never>?
    var watcher: Task<Void, Never>?
    var dataVersion: Int64 = 0
    /// Syncs run by `syncNow()`, the push lane or a flow, for `.syncing`.
    var syncing = 0
    /// True while the credential store holds no token.
    var signedOut = false
    /// Each child's default pot id, by child id (`defaultPotId(of:)`).
    var defaultPotIds: [String: String] = [:]

    init(path: String, credentials: any CredentialStore, transport: (any Transport)?, options: Options) throws {
        self.path = path
        self.credentials = credentials
        self.options = options
        self.transportOverride = transport
        store = try LedgerStore(path: path)
        service = LedgerService(store: store, now: options.clock)
        scheduler = SyncScheduler(configuration: options.scheduler, random: options.random)
        let (queued, eventQueue) = AsyncStream.makeStream(of: QueuedEvent.self)
        self.eventQueue = eventQueue
        Task { [weak self] in
            for await event in queued {
                guard let self else { return }
                await self.deliver(event)
            }
        }
    }

    deinit {
        eventQueue.finish()
    }

    /// Opens (creating when absent) the ledger stored at `store`.
    /// - Parameters:
    ///   - server: the kidledger server's base URL; nil keeps the one set before, if any
    ///     (a ledger without a server is local-only until `setServer(_:)`).
    ///   - credentials: where this device's bearer token is kept.
    public static func open(store: URL, server: URL?, credentials: any CredentialStore) async throws -> Ledger {
        try await open(store: store, server: server, credentials: credentials, transport: nil, options: Options())
    }

    /// `open` with a transport of the caller's (tests: in-memory or fault-injecting) and options.
    package static func open(store: URL, server: URL?, credentials: any CredentialStore,
                             transport: (any Transport)?, options: Options) async throws -> Ledger {
        let ledger: Ledger
        do {
            ledger = try Ledger(path: store.path, credentials: credentials, transport: transport, options: options)
        } catch {
            throw LedgerError(error)
        }
        try await ledger.prepare(server: server)
        return ledger
    }

    private func prepare(server: URL?) async throws {
        if let server { try setServerURL(server) }
        try await moveTokensOutOfDatabase()
        signedOut = await currentToken() == nil
        dataVersion = (try? currentDataVersion()) ?? 0
        await payDueAllowances()
    }

    /// Sets (or, nil, forgets) the server this ledger syncs with.
    public func setServer(_ server: URL?) async throws {
        if let server { try setServerURL(server) } else {
            try publicErrors { try store.set(.serverURL, nil) }
            _ = scheduler.stop(now: now())
            lanes = nil
        }
    }

    /// The server this ledger syncs with, if any.
    public var server: URL? {
        (try? store.string(.serverURL)).flatMap { $0 }.flatMap(URL.init(string:))
    }

    private func setServerURL(_ server: URL) throws {
        guard let scheme = server.scheme?.lowercased(), scheme == "http" || scheme == "https", server.host != nil else {
            throw LedgerError.invalidInput(field: "server", message: "must be an http or https URL")
        }
        let text = server.absoluteString
        if try publicErrors({ try store.string(.serverURL) }) != text {
            try publicErrors { try store.set(.serverURL, text) }
            lanes = nil
        }
    }

    /// Earlier versions kept the bearer token in the replica: move it to the credential store.
    private func moveTokensOutOfDatabase() async throws {
        let stored = try publicErrors { (try store.string(.token), try store.string(.pinnedToken)) }
        guard stored.0 != nil || stored.1 != nil else { return }
        do {
            if let token = stored.0, try await credentials.token() == nil { try await credentials.setToken(token) }
            if let pinned = stored.1, try await credentials.pinnedToken() == nil { try await credentials.setPinnedToken(pinned) }
        } catch {
            throw LedgerError.store(underlying: error)
        }
        try publicErrors {
            try store.transaction {
                try store.set(.token, nil)
                try store.set(.pinnedToken, nil)
            }
        }
    }

    // MARK: Helpers

    /// Seconds on a monotonic clock, for the scheduler.
    nonisolated func now() -> Double {
        Double(DispatchTime.now().uptimeNanoseconds) / 1e9
    }

    /// The two sync lanes, made when first needed; nil without a server.
    func syncLanes() throws -> (live: SyncLane, push: SyncLane) {
        if let lanes { return lanes }
        let transport: any Transport
        if let transportOverride {
            transport = transportOverride
        } else {
            guard let url = server else { throw LedgerError.notAllowed(reason: "This ledger has no server set.") }
            transport = URLSessionTransport(baseURL: url)
        }
        let events: @Sendable (SyncEvent) -> Void = { [eventQueue] event in
            eventQueue.yield(.sync(event))
        }
        let made = try publicErrors {
            (try SyncLane(path: path, transport: transport, name: "live", events: events),
             try SyncLane(path: path, transport: transport, name: "push", events: events))
        }
        lanes = made
        return made
    }

    /// The current token, or nil when signed out (an unreadable credential store reads as signed out).
    func currentToken() async -> String? {
        (try? await credentials.token()) ?? nil
    }

    func currentDataVersion() throws -> Int64 {
        try store.dataVersion()
    }

    /// The stored value of `key`; nil when absent or unreadable.
    func meta(_ key: MetaKey) -> String? {
        (try? store.string(key)) ?? nil
    }

    func setMeta(_ key: MetaKey, _ value: String?) throws {
        try store.set(key, value)
    }
}
