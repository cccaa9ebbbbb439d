import Foundation
import Synchronization

/// Counts failed authentications (or notifications) per client (`ClientKey`: an IPv4
/// address or an IPv6 /64) in a minute-long window that starts with the first failure; past
/// the limit, requests from the client whose token fails are answered 429 until the window
/// ends. Valid tokens are never limited.
final class AuthLimiter: Sendable {
    private struct Window { var start: Double; var failures: Int }
    private let windows = Mutex<[ClientKey: Window]>([:])
    let limit: Int

    init(limit: Int) { self.limit = limit }

    private func now() -> Double { Date().timeIntervalSince1970 }

    func fail(_ address: String) {
        let t = now(), key = ClientKey(address)
        windows.withLock { w in
            if w.count > 100_000 { w = w.filter { t - $0.value.start < 60 } }
            var win = w[key] ?? Window(start: t, failures: 0)
            if t - win.start >= 60 { win = Window(start: t, failures: 0) }
            win.failures += 1
            w[key] = win
        }
    }

    /// Seconds to wait when the address's client is over the limit, else nil.
    func retryAfter(_ address: String) -> Int? {
        let t = now(), key = ClientKey(address)
        return windows.withLock { w in
            guard let win = w[key], t - win.start < 60, win.failures >= limit else { return nil }
            return max(1, Int((60 - (t - win.start)).rounded(.up)))
        }
    }
}

extension AuthLimiter {
    /// The answer to a failed authentication from `address`: 429 `rate_limited` with
    /// `Retry-After` while the address is past its limit, else `failure` (and this failure is
    /// counted).
    func refusal(_ address: String, _ failure: () -> APIError) -> APIError {
        if let retry = retryAfter(address) {
            var e = APIError(429, "rate_limited", "Too many failed authentications; retry later.")
            e.headers.set("Retry-After", String(retry))
            return e
        }
        fail(address)
        return failure()
    }
}

/// Counts what a key (a child token) does in a window of `seconds` that starts with its
/// first act; past `limit` acts the key is refused until the window ends. Per process.
final class WindowLimiter: Sendable {
    private struct Window { var start: Double; var count: Int }
    private let windows = Mutex<[String: Window]>([:])
    let limit: Int
    let seconds: Double

    init(limit: Int, seconds: Double) { (self.limit, self.seconds) = (limit, seconds) }

    /// Counts one act of `key`: nil when it is allowed, else the seconds to wait (not counted).
    func take(_ key: String) -> Int? {
        guard limit > 0 else { return nil }
        let t = Date().timeIntervalSince1970
        return windows.withLock { w in
            if w.count > 100_000 { w = w.filter { t - $0.value.start < seconds } }
            var win = w[key] ?? Window(start: t, count: 0)
            if t - win.start >= seconds { win = Window(start: t, count: 0) }
            if win.count >= limit { return max(1, Int((seconds - (t - win.start)).rounded(.up))) }
            win.count += 1
            w[key] = win
            return nil
        }
    }
}
