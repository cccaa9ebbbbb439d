import LedgerModel

/// An account as stored.
struct AccountRecord: Sendable, Equatable {
    var id: String
    var handle: String
    var displayName: String
    var createdAt: Int64
}

/// A device token as stored (never its secret).
struct TokenRecord: Sendable, Equatable {
    var id: String
    var accountId: String
    var deviceName: String
    var createdAt: Int64
    var lastUsedAt: Int64?
}

/// A household as stored.
struct HouseholdRecord: Sendable, Equatable {
    var id: String
    var name: String
    var currency: String
    var ownerAccountId: String
    var createdAt: Int64
    var modifiedAt: Int64
    var changeTag: String
    var shared: Bool
}

/// A household in an account's list, with the account's standing in it.
struct HouseholdListing: Sendable, Equatable {
    var household: HouseholdRecord
    var role: Membership.Role
    var permission: Membership.Permission
}

/// One page of a list and the position to continue after (nil: the last page).
struct ListPage<Item: Sendable>: Sendable {
    var items: [Item]
    var next: Int64?
}

/// What decides an account's access to a household: its owner and the account's
/// participant row, if it was ever invited.
struct AccessRecord: Sendable, Equatable {
    var ownerAccountId: String
    var status: Participant.Status?
    var permission: Membership.Permission?
    /// Whether the participant ever accepted (a revoked or departed one who never did was
    /// never a member).
    var everAccepted: Bool
}

/// A participant of a household's share, with its account.
struct Participant: Sendable, Equatable {
    /// Where the participant stands, as stored and as answered.
    enum Status: String, Sendable {
        case invited, accepted, declined, revoked, left

        /// Invited or accepted: the participant still holds (or may still take) access.
        var isActive: Bool { self == .invited || self == .accepted }
    }

    var householdId: String
    var accountId: String
    var handle: String
    var displayName: String
    var permission: Membership.Permission
    var status: Status
    var invitationId: String
    var invitedAt: Int64
}

/// An invitation addressed to the caller.
struct Invitation: Sendable, Equatable {
    var id: String
    var householdId: String
    var householdName: String
    var ownerDisplayName: String
    var permission: Membership.Permission
    var invitedAt: Int64
}

/// Where a list of pending invitations (newest first) continues: after the invitation
/// with this time and row order.
struct InvitationPosition: Sendable, Equatable {
    var invitedAt: Int64
    var order: Int64
}

/// One page of an account's pending invitations and the position to continue after (nil:
/// the last page).
struct InvitationPage: Sendable, Equatable {
    var items: [Invitation]
    var next: InvitationPosition?
}

/// Pending invitations the quotas count: those sent from the inviter's households, those
/// waiting for the invitee, and those of the first waiting for the second.
struct PendingInvitationCounts: Sendable, Equatable {
    var byInviter: Int64
    var toInvitee: Int64
    var byInviterToInvitee: Int64 = 0
}

/// The caps on pending invitations (0: none).
struct InvitationLimits: Sendable, Equatable {
    var perInviter = 0
    var perInvitee = 0
    /// How many of one invitee's pending invitations one inviter may hold, so that a
    /// stranger's flood cannot take every slot the invitee has.
    var perInviterForInvitee = 0
}

/// An account the caller blocked: its invitations to the caller are refused.
struct BlockRecord: Sendable, Equatable {
    var accountId: String
    var handle: String
    var displayName: String
    var createdAt: Int64
}

/// Where a list ordered by (time, id) continues: after (or, newest first, before) the row
/// with this time and id.
struct TimeAndIdPosition: Sendable, Equatable {
    var time: Int64
    var id: String
}

/// Where the devices of `GET …/sync-status` continue: after this (account, token) pair.
struct DevicePosition: Sendable, Equatable {
    var accountId: String
    var tokenId: String
}

/// One page of a list and the position to continue from (nil: the last page).
struct KeyedPage<Item: Sendable & Equatable, Position: Sendable & Equatable>: Sendable, Equatable {
    var items: [Item]
    var next: Position?
}

/// A household's feed position.
struct FeedHead: Sendable, Equatable {
    var seq: Int64
    var incarnation: Int64
}

/// Children and transactions of the change feed, each kind oldest change first, with the
/// sequence value of each record's last change (`childSeqs[i]` is `children[i]`'s). Kept
/// as parallel arrays so that paging cuts them in place, without copying a record.
struct FeedChanges: Sendable {
    var children: [Child] = []
    var childSeqs: [Int64] = []
    var transactions: [LedgerTransaction] = []
    var transactionSeqs: [Int64] = []

    var count: Int { children.count + transactions.count }

    /// The sequence values of the first `limit` changes in feed order (by sequence value,
    /// children before transactions within one).
    func mergedSeqs(limit: Int) -> [Int64] {
        var out: [Int64] = []
        out.reserveCapacity(min(limit, count))
        var i = 0, j = 0
        while out.count < limit && (i < childSeqs.count || j < transactionSeqs.count) {
            if j >= transactionSeqs.count || (i < childSeqs.count && childSeqs[i] <= transactionSeqs[j]) {
                out.append(childSeqs[i]); i += 1
            } else {
                out.append(transactionSeqs[j]); j += 1
            }
        }
        return out
    }

    /// Drops the changes after sequence value `seq`.
    mutating func keep(through seq: Int64) {
        let kids = childSeqs.count - (childSeqs.lastIndex { $0 <= seq }.map { $0 + 1 } ?? 0)
        children.removeLast(kids); childSeqs.removeLast(kids)
        let txs = transactionSeqs.count - (transactionSeqs.lastIndex { $0 <= seq }.map { $0 + 1 } ?? 0)
        transactions.removeLast(txs); transactionSeqs.removeLast(txs)
    }
}

/// One page of a household's change feed, read in one snapshot.
struct FeedPage: Sendable {
    var household: HouseholdRecord
    var membership: Membership
    var children: [Child]
    var transactions: [LedgerTransaction]
    /// Where the page ends.
    var nextToken: SyncToken
    /// The position the page started after (0 for a full pull).
    var since: Int64
    var moreComing: Bool

    var records: Int { children.count + transactions.count }
    /// Whether the household changed after `since`.
    var hasNews: Bool { nextToken.seq > since || records > 0 }
}

/// A device's sync progress in one household.
struct DeviceSyncRecord: Sendable, Equatable {
    var tokenId: String
    var accountId: String
    var deviceName: String
    var lastPullAt: Int64?
    var lastPushAt: Int64?
    /// Records changed after the device's last pull.
    var changesBehind: Int64
}

/// `GET …/sync-status`, read in one snapshot: one page of its devices.
struct SyncStatusReport: Sendable {
    var latestToken: SyncToken
    var membership: Membership
    var devices: [DeviceSyncRecord]
    /// Where the next page of devices starts (nil: this is the last).
    var next: DevicePosition? = nil
}

/// A write that may have found its record already there.
enum Written<Record: Sendable>: Sendable {
    case created(Record)
    case existing(Record)

    var record: Record {
        switch self {
        case .created(let r), .existing(let r): return r
        }
    }
    var isCreated: Bool { if case .created = self { true } else { false } }
}

/// A transaction written (or found already written) and its child's balance after it.
///
/// A class: the answer passes from the writer to the request through several generic
/// hops (result slot, completion, `Result` mappings), and each copy of a struct holding a
/// transaction's eleven strings retains every one of them.
final class TransactionWrite: Sendable, Equatable {
    let transaction: LedgerTransaction
    let balanceCents: Int64
    /// false: an identical record was already there (an idempotent replay).
    let saved: Bool

    init(transaction: LedgerTransaction, balanceCents: Int64, saved: Bool) {
        self.transaction = transaction
        self.balanceCents = balanceCents
        self.saved = saved
    }

    static func == (a: TransactionWrite, b: TransactionWrite) -> Bool {
        a.transaction == b.transaction && a.balanceCents == b.balanceCents && a.saved == b.saved
    }
}

/// What one durable commit changed, for wake-ups and caches.
struct StorageCommit: Sendable, Equatable {
    /// Households whose feed moved (or that were deleted): their long-polls wake.
    var touched: Set<String> = []
    /// Tokens revoked: remembered tokens must be checked again, and their long-polls end.
    var revokedTokens: Set<String> = []

    var isEmpty: Bool { touched.isEmpty && revokedTokens.isEmpty }
}
