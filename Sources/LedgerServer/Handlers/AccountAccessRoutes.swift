import LedgerCore
import LedgerModel

/// How an account is reached besides its device tokens, and how it is handed on or ended:
/// link codes, recovery codes, owner transfer, account deletion (API.md "Identity").
enum AccountAccessRoutes {
    /// The largest body the no-token routes read, in bytes: theirs are a few short strings.
    static let codeBodyLimit = 4096

    /// 429 `rate_limited` with `Retry-After` (seconds).
    static func rateLimited(_ detail: String, retryAfter seconds: Int) -> APIError {
        var e = APIError(429, "rate_limited", detail + " Retry in \(seconds) s.")
        e.headers.set("Retry-After", String(seconds))
        return e
    }

    /// Whole seconds, rounded up, of a wait in milliseconds (at least 1).
    static func seconds(_ ms: Int64) -> Int { max(1, Int((ms + 999) / 1000)) }
}
