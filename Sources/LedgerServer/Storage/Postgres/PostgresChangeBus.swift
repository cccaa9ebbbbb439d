#if Postgres
import Foundation
import PostgresKit
import Synchronization

/// Carries commits between server processes that share one PostgreSQL database, so a
/// long-poll parked on one process wakes when another commits, and a token revoked through
/// one is refused by all.
///
/// Each process keeps one dedicated connection that LISTENs on `channel`, on a thread of
/// its own that waits on the connection's socket. `publish` NOTIFYs after a commit, outside
/// the write transaction (inside it, NOTIFY would serialise every commit on the
/// notification queue's lock). Payloads list what changed: `h:<household>` and
/// `t:<revoked token>`, comma-separated, at most 7,000 bytes each (bigger commits are split).
/// Notifications a process sent itself are skipped: it already woke its own waiters.
///
/// When the listening connection drops, the bus reconnects with backoff, LISTENs again and
/// calls `onResync`: notifications sent meanwhile are lost, so every local waiter must
/// look again. `onDisconnect` runs when a listening connection is lost.
final class PostgresChangeBus: Sendable {
    let channel: String
    private let url: String
    private let publisher: PGPool
    private let onRemote: @Sendable (StorageCommit) -> Void
    private let onResync: @Sendable () -> Void
    private let onDisconnect: @Sendable () -> Void
    private struct State {
        var stopped = false
        /// Backend pids of this process's publishing connections (their echoes are skipped).
        var ownPIDs: Set<Int32> = []
        var listening = false
    }
    private let state = Mutex(State())
    private let finished = DispatchSemaphore(value: 0)

    /// Most bytes of one payload (PostgreSQL allows up to 8,000).
    static let maxPayload = 7000

    init(url: String, channel: String = "kidledger_changes",
         onRemote: @escaping @Sendable (StorageCommit) -> Void, onResync: @escaping @Sendable () -> Void,
         onDisconnect: @escaping @Sendable () -> Void = {}) {
        self.url = url
        self.channel = channel
        self.publisher = PGPool(url: url, size: 2, connectTimeout: 2, answerTimeout: 3, acquireTimeout: 2)
        self.onRemote = onRemote
        self.onResync = onResync
        self.onDisconnect = onDisconnect
    }

    /// Whether the listening connection is up (for readiness).
    var isListening: Bool { state.withLock { $0.listening } }

    /// Waits up to `seconds` for the listening connection; whether it is up.
    @discardableResult
    func waitUntilListening(seconds: Double) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !isListening {
            if Date() >= deadline { return false }
            Thread.sleep(forTimeInterval: 0.005)
        }
        return true
    }

    /// Starts the listening thread.
    func start() {
        let thread = Thread { [self] in listen() }
        thread.name = "kidledger.pg.listen"
        thread.start()
    }

    /// Stops listening (returns once the thread has ended).
    func stop() {
        let wasRunning = state.withLock { s -> Bool in
            defer { s.stopped = true }
            return !s.stopped
        }
        if wasRunning { finished.wait() }
        publisher.closeIdle()
    }

    /// Tells the other processes about a durable commit. Best effort: a lost notification
    /// delays a wake-up until the waiter's own timeout or the next change.
    func publish(_ commit: StorageCommit) {
        guard !commit.isEmpty else { return }
        for payload in Self.payloads(commit) {
            try? publisher.with { db in
                state.withLock { _ = $0.ownPIDs.insert(db.backendPID) }
                try db.notify(channel, payload: payload)
            }
        }
    }

    /// The payloads announcing `commit`, each within `maxPayload` bytes.
    static func payloads(_ commit: StorageCommit) -> [String] {
        let items = commit.touched.sorted().map { "h:" + $0 } + commit.revokedTokens.sorted().map { "t:" + $0 }
        var out: [String] = [], current = ""
        for item in items {
            if !current.isEmpty && current.utf8.count + 1 + item.utf8.count > maxPayload {
                out.append(current)
                current = ""
            }
            current += current.isEmpty ? item : "," + item
        }
        if !current.isEmpty { out.append(current) }
        return out
    }

    /// What a payload announces (unknown items are ignored).
    static func commit(fromPayload payload: String) -> StorageCommit {
        var c = StorageCommit()
        for item in payload.split(separator: ",") {
            if item.hasPrefix("h:") { c.touched.insert(String(item.dropFirst(2))) }
            if item.hasPrefix("t:") { c.revokedTokens.insert(String(item.dropFirst(2))) }
        }
        return c
    }

    private var stopped: Bool { state.withLock { $0.stopped } }

    private func listen() {
        defer { finished.signal() }
        var db: PGConnection?
        var backoff = 0.05
        while !stopped {
            do {
                if db == nil {
                    let c = try PGConnection(url: url, connectTimeout: 2)
                    try c.listen(channel)
                    db = c
                    state.withLock { $0.listening = true }
                    backoff = 0.05
                    // Anything announced while nobody listened is lost: look again.
                    onResync()
                }
                let notes = try db!.waitForNotifications(timeout: 0.25)
                if notes.isEmpty { continue }
                let own = state.withLock { $0.ownPIDs }
                var commit = StorageCommit()
                for n in notes where n.channel == channel && !own.contains(n.pid) {
                    let c = Self.commit(fromPayload: n.payload)
                    commit.touched.formUnion(c.touched)
                    commit.revokedTokens.formUnion(c.revokedTokens)
                }
                if !commit.isEmpty { onRemote(commit) }
            } catch {
                db = nil
                let was = state.withLock { s -> Bool in
                    defer { s.listening = false }
                    return s.listening
                }
                if was { onDisconnect() }
                Thread.sleep(forTimeInterval: backoff)
                backoff = min(backoff * 2, 2)
            }
        }
        state.withLock { $0.listening = false }
    }
}
#endif
