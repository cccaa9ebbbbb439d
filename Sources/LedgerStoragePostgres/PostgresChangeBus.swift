#if Postgres
import Foundation
import LedgerCore
import PostgresKit
import SystemKit
import Synchronization

/// Carries commits between server processes that share one PostgreSQL database, so a
/// long-poll parked on one process wakes when another commits, and a token revoked through
/// one is refused by all.
///
/// Each process keeps one dedicated connection that LISTENs on `channel`, on a thread of
/// its own that waits on the connection's socket. `publish` NOTIFYs after a commit, outside
/// the write transaction (inside it, NOTIFY would serialise every commit on the
/// notification queue's lock). Payloads list what changed: `h:<household>` and
/// `t:<revoked token>`, comma-separated, at most 7,000 bytes each (bigger commits are split),
/// after `o:<origin>`, the sending bus's random id. Notifications a process sent itself are
/// skipped by that id (it already woke its own waiters) — not by the sending session's
/// backend pid, which another process's session gets once the pid is recycled, or shares
/// behind a connection pooler, and whose notifications would then be dropped for good.
///
/// When the listening connection drops, the bus reconnects with backoff, LISTENs again and
/// calls `onResync`: notifications sent meanwhile are lost, so every local waiter must
/// look again. `onDisconnect` runs when a listening connection is lost.
final class PostgresChangeBus: Sendable {
    let channel: String
    private let url: String
    /// This bus's id in the payloads it sends.
    let origin: String
    private let publisher: PGPool
    private let onRemote: @Sendable (StorageCommit) -> Void
    private let onResync: @Sendable () -> Void
    private let onDisconnect: @Sendable () -> Void
    private struct State {
        var stopped = false
        var listening = false
        /// Commits waiting for the publishing thread (merged).
        var unsent = StorageCommit()
        var publishing = false
    }
    private let state = Mutex(State())
    private let finished = DispatchSemaphore(value: 0)
    /// Signalled when `unsent` gained something (or the bus stops).
    private let wake = DispatchSemaphore(value: 0)
    private let publisherFinished = DispatchSemaphore(value: 0)

    /// Most bytes of one payload (PostgreSQL allows up to 8,000).
    static let maxPayload = 7000

    /// - Parameter publisher: the sessions notifications are sent on (nil: two of its own).
    init(url: String, channel: String = "kidledger_changes", publisher: PGPool? = nil,
         onRemote: @escaping @Sendable (StorageCommit) -> Void, onResync: @escaping @Sendable () -> Void,
         onDisconnect: @escaping @Sendable () -> Void = {}) {
        self.url = url
        self.channel = channel
        self.origin = String(UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(16))
        self.publisher = publisher ?? PGPool(url: url, size: 2, application: PostgresLedgerStorage.application, connectTimeout: 2,
                                             answerTimeout: 3, acquireTimeout: 2)
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

    /// Starts the listening and the publishing threads.
    func start() {
        let thread = Thread { [self] in
            nameCurrentThread("kl-pg-listen")
            listen()
        }
        thread.start()
        state.withLock { $0.publishing = true }
        let sender = Thread { [self] in
            nameCurrentThread("kl-pg-notify")
            sendPublished()
        }
        sender.start()
    }

    /// Stops listening and publishing (returns once both threads have ended, after what
    /// was published so far was sent).
    func stop() {
        let (wasRunning, wasPublishing) = state.withLock { s -> (Bool, Bool) in
            defer { s.stopped = true }
            return (!s.stopped, s.publishing)
        }
        if wasRunning { finished.wait() }
        if wasRunning && wasPublishing {
            wake.signal()
            publisherFinished.wait()
        }
        publisher.closeIdle()
    }

    /// Tells the other processes about a durable commit, without waiting. Best effort: a
    /// lost notification delays a wake-up until the waiter's own timeout or the next change.
    ///
    /// One thread sends what was published: a commit published while the previous
    /// notification is on its way joins the next one with every other commit published
    /// meanwhile, so a busy process sends one NOTIFY per round trip, not one per commit
    /// (each NOTIFY is a transaction of its own, serialised on the notification queue).
    /// Before `start` (or after `stop`), it is sent on the calling thread.
    func publish(_ commit: StorageCommit) {
        guard !commit.isEmpty else { return }
        let queued = state.withLock { s -> Bool in
            guard s.publishing && !s.stopped else { return false }
            s.unsent.touched.formUnion(commit.touched)
            s.unsent.revokedTokens.formUnion(commit.revokedTokens)
            return true
        }
        if queued { wake.signal() } else { send(commit) }
    }

    private func send(_ commit: StorageCommit) {
        for payload in Self.payloads(commit, origin: origin) {
            try? publisher.with { try $0.notify(channel, payload: payload) }
        }
    }

    /// The publishing thread: sends what accumulated, until the bus stops (then once more).
    private func sendPublished() {
        defer { publisherFinished.signal() }
        while true {
            wake.wait()
            let (commit, stopping) = state.withLock { s -> (StorageCommit, Bool) in
                defer { s.unsent = StorageCommit() }
                if s.stopped { s.publishing = false }
                return (s.unsent, s.stopped)
            }
            if !commit.isEmpty { send(commit) }
            if stopping { return }
        }
    }

    /// The payloads announcing `commit`, each within `maxPayload` bytes and starting with
    /// `o:<origin>`.
    static func payloads(_ commit: StorageCommit, origin: String) -> [String] {
        let items = commit.touched.sorted().map { "h:" + $0 } + commit.revokedTokens.sorted().map { "t:" + $0 }
        let head = "o:" + origin
        var out: [String] = [], current = head
        for item in items {
            if current != head && current.utf8.count + 1 + item.utf8.count > maxPayload {
                out.append(current)
                current = head
            }
            current += "," + item
        }
        if current != head { out.append(current) }
        return out
    }

    /// The origin a payload names (nil: none).
    static func origin(ofPayload payload: String) -> Substring? {
        guard payload.hasPrefix("o:") else { return nil }
        return payload.dropFirst(2).prefix { $0 != "," }
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
                    let c = try PGConnection(url: url, application: PostgresLedgerStorage.application, connectTimeout: 2)
                    try c.listen(channel)
                    db = c
                    state.withLock { $0.listening = true }
                    backoff = 0.05
                    // Anything announced while nobody listened is lost: look again.
                    onResync()
                }
                let notes = try db!.waitForNotifications(timeout: 0.25)
                if notes.isEmpty { continue }
                var commit = StorageCommit()
                for n in notes where n.channel == channel && Self.origin(ofPayload: n.payload) != origin[...] {
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
