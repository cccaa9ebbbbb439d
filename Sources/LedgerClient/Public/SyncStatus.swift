import Foundation

/// Why shared editing is frozen until the user acts. Nothing local is deleted meanwhile.
public enum AttentionReason: String, Sendable, Equatable, Hashable, CaseIterable {
    /// The owner revoked this account's access, or it left.
    case accessRevoked
    /// This account may only read the household.
    case readOnly
    /// The owner deleted the household.
    case householdDeleted
    /// The device is signed in as a different account than the one its ledger belongs to.
    case accountChanged
    /// Records from the server could not be read and were set aside; everything else syncs.
    case unreadableChanges

    /// What happened, as a sentence for app users.
    public var explanation: String {
        switch self {
        case .accessRevoked: return "Your access to this household was revoked."
        case .readOnly: return "You have read-only access to this household."
        case .householdDeleted: return "This household was deleted by its owner."
        case .accountChanged: return "This device is signed in to a different account than the one this ledger belongs to."
        case .unreadableChanges: return "Some changes from other devices could not be read by this version of the app."
        }
    }

    /// What the user can do about it, as a sentence for app users.
    public var suggestion: String {
        switch self {
        case .accessRevoked: return "Ask the owner to invite you again, or leave the household to keep this copy as your own ledger."
        case .readOnly: return "Ask the owner for read-write access."
        case .householdDeleted: return "Leave the household to keep this copy as your own ledger."
        case .accountChanged: return "Sign in to this ledger's account again, or join another household and replace this ledger."
        case .unreadableChanges: return "Update the app to see them; your own changes are kept and keep syncing."
        }
    }
}

/// The sync status as a user sees it.
public enum SyncStatus: Sendable, Equatable, Hashable {
    /// Everything local is on the server; the last sync succeeded at that time.
    case synced(at: Date)
    /// A sync is running.
    case syncing
    /// Local changes wait to be uploaded.
    case pending(count: Int)
    /// The server could not be reached since that time; `pending` changes wait.
    case offline(pending: Int, since: Date)
    /// Not signed in, or the server no longer accepts this device's sign-in.
    case accountUnavailable(pending: Int)
    /// Shared editing is frozen until the user acts; nothing local was deleted.
    case attentionRequired(AttentionReason, pending: Int)
    /// A ledger that was never shared: nothing to sync.
    case localOnly
    /// The server went back in time (its operator restored a backup or failed over) and lacks
    /// records this device holds, records it had acknowledged included. `pending` of them
    /// are this device's to upload again (the reconciliation runs with every sync); `waiting`
    /// can only come back from another member's device, or by the owner's restore from this
    /// device (`Ledger.restoreServerFromThisDevice()`). Never `synced` meanwhile.
    case reconciling(pending: Int, waiting: Int)

    /// Local changes waiting to be uploaded (0 when unknown or none).
    public var pendingCount: Int {
        switch self {
        case .synced, .syncing, .localOnly: return 0
        case .pending(let n): return n
        case .offline(let n, _), .accountUnavailable(let n), .attentionRequired(_, let n): return n
        case .reconciling(let n, _): return n
        }
    }
}
