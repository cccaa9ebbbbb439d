import Foundation
import LedgerModel

/// Where a transaction came from: `manual`, `siri`, `api`, `import`, `allowance`.
public typealias TransactionSource = LedgerModel.TransactionSource

/// Money as exact `Int64` cents: `Cents.parse("5.25")` is 525, `Cents.format(-525)` is "-5.25".
public typealias Cents = LedgerModel.Cents

/// The account a ledger is signed in as.
public struct Account: Sendable, Equatable, Hashable {
    public var id: String
    public var handle: String
    public var displayName: String

    public init(id: String, handle: String, displayName: String) {
        self.id = id
        self.handle = handle
        self.displayName = displayName
    }
}

/// A child of the household.
public struct Child: Sendable, Equatable, Hashable, Identifiable {
    public var id: String
    public var name: String
    public var archived: Bool
    public var sortOrder: Int64
    public var createdAt: Date
    public var modifiedAt: Date
}

/// One ledger entry: money added (positive) or taken (negative), or the reversal of another.
public struct LedgerTransaction: Sendable, Equatable, Hashable, Identifiable {
    public var id: String
    public var childId: String
    /// Signed cents: positive adds money, negative takes it.
    public var amountCents: Int64
    public var note: String
    public var source: TransactionSource
    public var createdAt: Date
    /// When the server recorded it; nil until it came back from the server.
    public var recordedAt: Date?
    public var authorAccountId: String?
    /// The transaction this one undoes, when it is a reversal.
    public var reversesId: String?
    /// The reversal that undid this transaction, if any.
    public var reversedBy: String?
    /// True while the transaction waits to be uploaded.
    public var isPending: Bool
    /// The pot it belongs to (the child's default pot unless it was put in another).
    public var potId: String = ""
}

/// The caller's role in a household.
public enum Role: String, Sendable, Equatable, Hashable, CaseIterable {
    case owner
    case participant
}

/// What a participant may do.
public enum Permission: String, Sendable, Equatable, Hashable, CaseIterable {
    case readWrite
    case readOnly
}

/// The household this ledger holds.
public struct HouseholdInfo: Sendable, Equatable, Hashable, Identifiable {
    public var id: String
    public var name: String
    /// ISO 4217 code, e.g. `USD`.
    public var currency: String
    /// Nil for a ledger that was never shared.
    public var role: Role?
    /// Nil for a ledger that was never shared.
    public var permission: Permission?
    /// True when other accounts take part (or may be invited).
    public var shared: Bool
}

/// A child with its balance.
public struct ChildSummary: Sendable, Equatable, Hashable, Identifiable {
    public var id: String
    public var name: String
    public var archived: Bool
    public var sortOrder: Int64
    public var balanceCents: Int64
    /// Local changes of this child (its record and its transactions) not yet uploaded.
    public var pendingCount: Int
    /// The child's pots, the default one first; their balances add up to `balanceCents`.
    public var pots: [PotSummary] = []
    /// The next allowance payment (the sum when several schedules pay that day), nil when
    /// no allowance schedule will pay.
    public var nextPayment: NextPayment? = nil
}

/// Everything a screen needs at once: the household, the children with balances, the status.
public struct LedgerSnapshot: Sendable, Equatable {
    public var household: HouseholdInfo?
    /// Every child, archived ones included, in sort order.
    public var children: [ChildSummary]
    public var status: SyncStatus
    /// Local changes the server refused, kept until dismissed (`Ledger.dismissRejected`).
    public var rejected: [RejectedChange]
    /// Requests waiting for a parent's decision (on a child's device: that child's own).
    public var pendingRequests: Int = 0
    /// A parent's ledger, or one child's (then `children` holds only that child).
    public var mode: LedgerMode = .parent
}

/// One page of a child's history, newest first.
public struct HistoryPage: Sendable, Equatable {
    public var items: [LedgerTransaction]
    /// Pass as `before` for the next (older) page; nil on the last page.
    public var nextCursor: String?
}

/// What enabling sharing will upload.
public struct SharingPreview: Sendable, Equatable {
    public var household: HouseholdInfo
    public var children: [ChildSummary]
    public var childCount: Int
    public var transactionCount: Int
}

/// Where a participant stands.
public enum ParticipantStatus: String, Sendable, Equatable, Hashable, CaseIterable {
    case invited, accepted, declined, revoked, left
}

/// An account taking part in (or invited to) the household's share.
public struct Participant: Sendable, Equatable, Hashable, Identifiable {
    public var accountId: String
    public var handle: String?
    public var displayName: String?
    public var permission: Permission
    public var status: ParticipantStatus
    public var invitationId: String?
    public var id: String { accountId }
}

/// An invitation to join another account's household.
public struct Invitation: Sendable, Equatable, Hashable, Identifiable {
    public var id: String
    public var householdId: String
    public var householdName: String
    public var ownerDisplayName: String?
    public var permission: Permission
    public var invitedAt: Date?
}

/// What one sync did.
public struct SyncReport: Sendable, Equatable {
    public var pushed: Int
    public var pulledChildren: Int
    public var pulledTransactions: Int
    public var conflicts: Int
    public var rejected: Int

    public init(pushed: Int = 0, pulledChildren: Int = 0, pulledTransactions: Int = 0, conflicts: Int = 0, rejected: Int = 0) {
        self.pushed = pushed
        self.pulledChildren = pulledChildren
        self.pulledTransactions = pulledTransactions
        self.conflicts = conflicts
        self.rejected = rejected
    }
}

/// A local change the server refused for good. It stays visible (with its amount or name)
/// until the app dismisses it; a refused transaction no longer counts in the balance.
public struct RejectedChange: Sendable, Equatable, Hashable, Identifiable {
    public enum Kind: String, Sendable, Equatable, Hashable {
        case child
        case transaction
        case schedule
        case pot
        case request
    }
    public var kind: Kind
    /// The id of the refused record.
    public var id: String
    /// The child it concerns (the child itself for a child record).
    public var childId: String?
    /// The name of a refused child or pot; nil otherwise.
    public var name: String?
    /// The refused transaction's (or allowance's) amount; nil otherwise.
    public var amountCents: Int64?
    public var note: String?
    /// The server's stable code, e.g. `validation_failed`.
    public var code: String
    /// The server's own words about it (may be empty).
    public var detail: String
    public var rejectedAt: Date

    /// A sentence for app users.
    public var reason: String {
        switch code {
        case "id_conflict": return "The server already holds a different record with the same identity."
        case "unknown_child": return "The child this change belongs to is not on the server."
        case "unknown_transaction": return "The transaction this change undoes is not on the server."
        case "read_only", "forbidden": return "You may not change this household."
        case "modified_by_mismatch": return "The change was attributed to another account."
        case "clock_skew": return "The device's clock is too far ahead of the server's."
        default: return "The server refused this change (\(code))."
        }
    }
}

/// Something an app may want to tell its user about.
public enum LedgerEvent: Sendable, Equatable {
    /// Records from other devices were merged into this ledger.
    case remoteChanges(children: Int, transactions: Int)
    /// A local change was refused by the server; it is kept (see `LedgerSnapshot.rejected`).
    case rejected(RejectedChange)
    /// Shared editing stopped until the user acts.
    case attentionRequired(AttentionReason)
    /// A sync failed (automatic or not); local changes are kept.
    case syncFailed(LedgerError)
}
