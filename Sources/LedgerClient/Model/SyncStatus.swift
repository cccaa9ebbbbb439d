/// Why shared editing is frozen until the user acts.
public enum AttentionReason: String, Sendable, Equatable, CaseIterable {
    /// The owner revoked this account's access, or it left.
    case accessRevoked
    /// This account may only read the household.
    case readOnly
    /// The owner deleted the household.
    case householdDeleted
    /// The device is signed in as a different account than the one its ledger is pinned to.
    case accountChanged

    /// A sentence for people.
    public var explanation: String {
        switch self {
        case .accessRevoked: return "your access to this household was revoked"
        case .readOnly: return "you have read-only access to this household"
        case .householdDeleted: return "this household was deleted by its owner"
        case .accountChanged: return "this device is signed in to a different account than the one this ledger belongs to"
        }
    }

    /// What the user can do about it, as a sentence for people.
    public var remedy: String {
        switch self {
        case .accessRevoked:
            return "ask the owner to invite you again, or run `kidledger leave` to keep this copy as a local ledger"
        case .readOnly: return "ask the owner for read-write access"
        case .householdDeleted: return "run `kidledger leave` to keep this copy as a local ledger"
        case .accountChanged:
            return "go back to this ledger's account (`kidledger login --pinned`), or join another household with `kidledger join ID --replace-local`"
        }
    }
}

/// The sync status as a user sees it (DESIGN.md).
public enum SyncStatus: Sendable, Equatable {
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
    public var state: String {
        switch self {
        case .synced: return "synced"
        case .changesPending: return "changesPending"
        case .offline: return "offline"
        case .accountUnavailable: return "accountUnavailable"
        case .attentionRequired: return "attentionRequired"
        }
    }

    /// Records waiting to be pushed.
    public var pending: Int {
        switch self {
        case .synced: return 0
        case .changesPending(let n): return n
        case .offline(let n), .accountUnavailable(let n), .attentionRequired(_, let n): return n
        }
    }

    /// The attention reason, if any.
    public var reason: AttentionReason? {
        if case .attentionRequired(let r, _) = self { return r }
        return nil
    }
}
