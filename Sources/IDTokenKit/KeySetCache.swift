import Dispatch
import Foundation
import Synchronization

/// A provider's key set, read once and kept, refreshed when a token names a key it lacks.
///
/// Lookups of cached keys take a lock only for a dictionary read and never wait for a
/// refresh. A `kid` the set lacks refreshes it on the calling thread (other threads asking
/// for unknown keys meanwhile wait for that same refresh), at most once per
/// ``minimumRefreshInterval``; a `kid` still unknown afterwards is unknown until the next
/// allowed refresh. A set older than ``maximumAge`` is refreshed in the background while
/// its keys keep answering. A failed refresh keeps the keys already held.
public final class KeySetCache: Sendable {
    public let location: KeySetLocation
    /// The shortest time between two fetches, in seconds (default 60).
    public let minimumRefreshInterval: TimeInterval
    /// The age after which a lookup starts a background refresh, in seconds (default 3,600).
    public let maximumAge: TimeInterval
    private let fetcher: any KeySetFetcher
    private let uptime: @Sendable () -> TimeInterval
    private let onRefresh: (@Sendable (Result<JSONWebKeySet, KeySetError>) -> Void)?
    private let state = Mutex(State())

    private struct State {
        var keys = JSONWebKeySet()
        /// `uptime()` of the last fetch that produced a set, and its wall-clock time.
        var loadedAt: (uptime: TimeInterval, date: Date)?
        /// `uptime()` of the last fetch started, successful or not.
        var lastAttempt: TimeInterval?
        /// The refresh under way; waiters block on it.
        var refreshing: DispatchGroup?
        var lastError: KeySetError?
    }

    /// What one lookup decided under the lock.
    private enum Step {
        case found(JSONWebKey, refreshInBackground: DispatchGroup?)
        case fetch(DispatchGroup)
        case wait(DispatchGroup)
        case missing
    }

    /// - Parameters:
    ///   - location: where the key set is read from.
    ///   - fetcher: reads it, default ``SystemKeySetFetcher``.
    ///   - minimumRefreshInterval: seconds between two fetches at least, default 60.
    ///   - maximumAge: seconds after which a lookup refreshes in the background, default 3,600.
    ///   - uptime: a monotonic clock in seconds, default the system's uptime.
    ///   - onRefresh: called after each fetch with its outcome (for the operator's log).
    public init(location: KeySetLocation,
                fetcher: any KeySetFetcher = SystemKeySetFetcher(),
                minimumRefreshInterval: TimeInterval = 60,
                maximumAge: TimeInterval = 3_600,
                uptime: @escaping @Sendable () -> TimeInterval = { ProcessInfo.processInfo.systemUptime },
                onRefresh: (@Sendable (Result<JSONWebKeySet, KeySetError>) -> Void)? = nil) {
        self.location = location
        self.fetcher = fetcher
        self.minimumRefreshInterval = minimumRefreshInterval
        self.maximumAge = maximumAge
        self.uptime = uptime
        self.onRefresh = onRefresh
    }

    /// Fetches the key set now whatever the rate limit (at start-up), or waits for the fetch
    /// under way. Throws why it failed; the keys held before are kept then.
    @discardableResult
    public func load() throws(KeySetError) -> JSONWebKeySet {
        let step: Step = state.withLock { state in
            if let group = state.refreshing { return .wait(group) }
            return .fetch(begin(&state))
        }
        switch step {
        case .fetch(let group): refresh(group)
        case .wait(let group): group.wait()
        case .found, .missing: break
        }
        return try state.withLock { state throws(KeySetError) in
            if let error = state.lastError { throw error }
            return state.keys
        }
    }

    /// The key named `keyID`, refreshing the set first when it lacks it and the rate limit
    /// allows; nil when it is still unknown.
    public func key(for keyID: String) -> JSONWebKey? {
        let now = uptime()
        let step: Step = state.withLock { state in
            if let key = state.keys[keyID] {
                let stale = state.loadedAt.map { now - $0.uptime >= maximumAge } ?? true
                return .found(key, refreshInBackground: stale && mayRefresh(state, now) ? begin(&state) : nil)
            }
            if let group = state.refreshing { return .wait(group) }
            return mayRefresh(state, now) ? .fetch(begin(&state)) : .missing
        }
        switch step {
        case .found(let key, let group):
            if let group { DispatchQueue.global(qos: .utility).async { self.refresh(group) } }
            return key
        case .fetch(let group):
            refresh(group)
        case .wait(let group):
            group.wait()
        case .missing:
            return nil
        }
        return state.withLock { $0.keys[keyID] }
    }

    /// The keys held now, without fetching.
    public var keys: JSONWebKeySet { state.withLock { $0.keys } }

    /// When the held set was fetched (nil before the first success) and why the last fetch
    /// failed (nil when it succeeded).
    public var status: (loadedAt: Date?, lastError: KeySetError?) {
        state.withLock { ($0.loadedAt?.date, $0.lastError) }
    }

    private func mayRefresh(_ state: State, _ now: TimeInterval) -> Bool {
        guard state.refreshing == nil else { return false }
        guard let last = state.lastAttempt else { return true }
        return now - last >= minimumRefreshInterval
    }

    /// Marks a refresh as under way; the caller runs ``refresh(_:)`` with the group.
    private func begin(_ state: inout State) -> DispatchGroup {
        let group = DispatchGroup()
        group.enter()
        state.refreshing = group
        state.lastAttempt = uptime()
        return group
    }

    private func refresh(_ group: DispatchGroup) {
        let result: Result<JSONWebKeySet, KeySetError>
        do {
            result = .success(try JSONWebKeySet(json: try fetcher.fetch(location)))
        } catch let error as KeySetError {
            result = .failure(error)
        } catch {
            result = .failure(KeySetError("\(location): \(error)"))
        }
        let finished = uptime()
        state.withLock { state in
            switch result {
            case .success(let keys):
                state.keys = keys
                state.loadedAt = (finished, Date())
                state.lastError = nil
            case .failure(let error):
                state.lastError = error
            }
            state.refreshing = nil
        }
        group.leave()
        onRefresh?(result)
    }
}
