import LedgerCore
import Dispatch
import Synchronization

/// What this process learnt from the database's attempt counters: the keys a limit
/// refused, and until when. While a key is closed its requests are answered 429 without a
/// database write, so a client flooding past its limit costs the database nothing more.
/// The counters in the database stay the authority: another process, or this one before
/// its first refusal, asks them.
final class AttemptGate: Sendable {
    private let closed = Mutex<[String: Double]>([:])
    private let now: @Sendable () -> Double
    /// Most keys remembered; past it the reopened ones are forgotten.
    static let maxKeys = 100_000

    /// `now`: a monotonic clock in seconds.
    init(now: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }) {
        self.now = now
    }

    /// Seconds to wait while `key` of `scope` is closed, else nil.
    func retryAfter(scope: String, key: String) -> Int? {
        let t = now()
        return closed.withLock { c in
            guard let until = c[scope + " " + key], until > t else { return nil }
            return max(1, Int((until - t).rounded(.up)))
        }
    }

    /// Closes `key` of `scope` for `milliseconds`.
    func close(scope: String, key: String, milliseconds: Int64) {
        let t = now()
        closed.withLock { c in
            if c.count >= Self.maxKeys { c = c.filter { $0.value > t } }
            c[scope + " " + key] = t + Double(milliseconds) / 1000
        }
    }
}

extension ClientKey {
    /// The key a database-kept counter stores for the client: `v4:` and the address, `v6:`
    /// and the /64 network in hex, or `other:` and the peer's text.
    var counterKey: String {
        switch self {
        case .ipv4(let a): return "v4:\(a >> 24).\(a >> 16 & 255).\(a >> 8 & 255).\(a & 255)"
        case .ipv6Network(let n): return "v6:" + String(n, radix: 16)
        case .other(let s): return "other:" + String(s.prefix(64))
        }
    }
}
