import LedgerCore

extension StorageReadiness {
    /// The 503 `not_ready` that `/readyz` answers with; nil when ready.
    var notReady: APIError? {
        let detail: String, retryAfter: Int?
        switch self {
        case .ready: return nil
        case .outOfSpace: (detail, retryAfter) = ("The disk is full: writes fail until there is room again.", 10)
        case .notAnswering(let transient): (detail, retryAfter) = ("The database does not answer.", transient ? 1 : nil)
        case .changesNotHeard: (detail, retryAfter) = ("Changes made through other server processes are not being received.", 1)
        }
        var e = APIError(503, "not_ready", detail)
        if let retryAfter { e.headers.set("Retry-After", String(retryAfter)) }
        return e
    }
}
