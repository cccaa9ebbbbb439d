import Foundation
import Synchronization

/// Counts an account's invitations to handles that found no one (unknown, or whose account
/// blocked the inviter: the two answer alike) in a minute-long window that starts with the
/// first of them. Past the limit, every invitation the account sends is refused until the
/// window ends, so handles cannot be tried one after another to learn which exist.
///
/// Kept in memory per process: with several processes an account may try up to the limit
/// at each of them per minute.
final class HandleLookupLimiter: Sendable {
    private struct Window { var start: Double; var failures: Int }
    private let windows = Mutex<[String: Window]>([:])
    /// Failed lookups allowed per account per minute; 0: no limit.
    let limit: Int
    private let now: @Sendable () -> Double
    /// The window, in seconds.
    static let window: Double = 60
    /// Past this many accounts, finished windows are forgotten.
    static let maxWindows = 100_000

    init(limit: Int, now: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }) {
        self.limit = limit
        self.now = now
    }

    /// Counts one failed lookup of `account`.
    func fail(_ account: String) {
        guard limit > 0 else { return }
        let t = now()
        windows.withLock { w in
            if w.count >= Self.maxWindows { w = w.filter { t - $0.value.start < Self.window } }
            var win = w[account] ?? Window(start: t, failures: 0)
            if t - win.start >= Self.window { win = Window(start: t, failures: 0) }
            win.failures += 1
            w[account] = win
        }
    }

    /// Seconds to wait while `account` is over the limit, else nil.
    func retryAfter(_ account: String) -> Int? {
        guard limit > 0 else { return nil }
        let t = now()
        return windows.withLock { w in
            guard let win = w[account], t - win.start < Self.window, win.failures >= limit else { return nil }
            return max(1, Int((Self.window - (t - win.start)).rounded(.up)))
        }
    }

    /// How many accounts have a window remembered (for tests).
    var windowCount: Int { windows.withLock { $0.count } }
}
