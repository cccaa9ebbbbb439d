/// The persisted sync outcome the public `SyncStatus` is computed from.
enum SyncState: Sendable, Equatable {
    /// Everything local is on the server and the last sync succeeded (or nothing is shared).
    case synced
    /// Local changes wait to be pushed (count of records).
    case changesPending(Int)
    /// The server could not be reached on the last attempt; `pending` records wait.
    case offline(pending: Int)
    /// No token, or the server no longer accepts it.
    case accountUnavailable(pending: Int)
    /// Shared edits are frozen; nothing local was deleted.
    case attentionRequired(AttentionReason, pending: Int)

    /// The `state` word of `status --json`.
    var state: String {
        switch self {
        case .synced: return "synced"
        case .changesPending: return "changesPending"
        case .offline: return "offline"
        case .accountUnavailable: return "accountUnavailable"
        case .attentionRequired: return "attentionRequired"
        }
    }

    /// Records waiting to be pushed.
    var pending: Int {
        switch self {
        case .synced: return 0
        case .changesPending(let n): return n
        case .offline(let n), .accountUnavailable(let n), .attentionRequired(_, let n): return n
        }
    }

    /// The attention reason, if any.
    var reason: AttentionReason? {
        if case .attentionRequired(let r, _) = self { return r }
        return nil
    }
}
