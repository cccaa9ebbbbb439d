#if Postgres
import Dispatch
import LedgerModel

/// Up to `size` connections to one database, handed to one caller at a time. Connections
/// open lazily; one that died or was left inside a transaction is dropped, not reused.
public final class PGPool: Sendable {
    private struct Slot: @unchecked Sendable { let connection: PGConnection }
    /// Idle connections; many request threads take turns here (see `Locked`).
    private let idle = Locked<[Slot]>([])
    private let permits: DispatchSemaphore
    public let url: String
    public let size: Int
    private let setup: [String]
    private let transactionSetup: [String]
    /// Behind a transaction-mode pooler (`PGConnection.pooled`).
    public let pooled: Bool
    /// Each connection's `application_name`.
    public let application: String
    private let connectTimeout: Int
    /// Each connection's `answerTimeout`.
    public let answerTimeout: Double?
    /// Longest wait for a free connection, in seconds (nil: no limit).
    public let acquireTimeout: Double?

    public init(url: String, size: Int, setup: [String] = [], transactionSetup: [String] = [], pooled: Bool = false,
                application: String = "kidledger", connectTimeout: Int = 5, answerTimeout: Double? = nil, acquireTimeout: Double? = nil) {
        precondition(size >= 1)
        self.url = url
        self.size = size
        self.setup = setup
        self.transactionSetup = transactionSetup
        self.pooled = pooled
        self.application = application
        self.connectTimeout = connectTimeout
        self.answerTimeout = answerTimeout
        self.acquireTimeout = acquireTimeout
        permits = DispatchSemaphore(value: size)
    }

    /// Runs `body` with a connection on the calling thread (blocking while all are busy, at
    /// most `acquireTimeout`, then failing with `poolTimeout`).
    ///
    /// An idle connection may have died unnoticed (the server restarted): when `body` fails
    /// with the database unavailable on a reused connection, and not while committing, it
    /// runs once more on a new connection. `body` must therefore leave nothing behind when
    /// it fails (a transaction, or a read).
    public func with<T>(_ body: (PGConnection) throws -> T) throws -> T {
        if let acquireTimeout {
            guard permits.wait(timeout: .now() + acquireTimeout) == .success else {
                throw PGError(kind: .poolTimeout, message: "no free database connection within \(acquireTimeout) s")
            }
        } else {
            permits.wait()
        }
        defer { permits.signal() }
        if let slot = idle.withLock({ $0.popLast() }) {
            do { return try run(slot.connection, body) } catch let e as PGError where e.isUnavailable && !e.commitOutcomeUnknown {
                // Fall through to a fresh connection.
            }
        }
        return try run(PGConnection(url: url, setup: setup, transactionSetup: transactionSetup, pooled: pooled,
                                    application: application, connectTimeout: connectTimeout, answerTimeout: answerTimeout), body)
    }

    private func run<T>(_ c: PGConnection, _ body: (PGConnection) throws -> T) throws -> T {
        do {
            let value = try body(c)
            release(c)
            return value
        } catch {
            release(c)
            throw error
        }
    }

    private func release(_ c: PGConnection) {
        guard c.isConnected, !c.isInTransaction else { return }
        idle.withLock { if $0.count < size { $0.append(Slot(connection: c)) } }
    }

    /// Closes every idle connection (busy ones close when they come back broken or not at all).
    public func closeIdle() {
        _ = idle.withLock { slots in
            let all = slots
            slots.removeAll()
            return all
        }
    }
}
#endif
