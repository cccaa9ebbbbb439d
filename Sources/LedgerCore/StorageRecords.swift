import LedgerModel

/// An account as stored.
package struct AccountRecord: Sendable, Equatable {
    package var id: String
    package var handle: String
    package var displayName: String
    package var createdAt: Int64

    @usableFromInline package init(id: String, handle: String, displayName: String, createdAt: Int64) {
        (self.id, self.handle, self.displayName, self.createdAt) = (id, handle, displayName, createdAt)
    }
}

/// A device token as stored (never its secret).
package struct TokenRecord: Sendable, Equatable {
    package var id: String
    package var accountId: String
    package var deviceName: String
    package var createdAt: Int64
    package var lastUsedAt: Int64?
    /// Its push registration, where a list asked for it (`GET /v1/tokens`).
    package var push: PushRegistration?

    @usableFromInline package init(id: String, accountId: String, deviceName: String, createdAt: Int64, lastUsedAt: Int64? = nil) {
        (self.id, self.accountId, self.deviceName, self.createdAt) = (id, accountId, deviceName, createdAt)
        self.lastUsedAt = lastUsedAt
    }
}

/// A household as stored.
package struct HouseholdRecord: Sendable, Equatable {
    package var id: String
    package var name: String
    package var currency: String
    package var ownerAccountId: String
    package var createdAt: Int64
    package var modifiedAt: Int64
    package var changeTag: String
    package var shared: Bool

    @usableFromInline package init(id: String, name: String, currency: String, ownerAccountId: String, createdAt: Int64, modifiedAt: Int64,
                 changeTag: String, shared: Bool) {
        (self.id, self.name, self.currency, self.ownerAccountId) = (id, name, currency, ownerAccountId)
        (self.createdAt, self.modifiedAt, self.changeTag, self.shared) = (createdAt, modifiedAt, changeTag, shared)
    }
}

/// A household in an account's list, with the account's standing in it.
package struct HouseholdListing: Sendable, Equatable {
    package var household: HouseholdRecord
    package var role: Membership.Role
    package var permission: Membership.Permission

    @usableFromInline package init(household: HouseholdRecord, role: Membership.Role, permission: Membership.Permission) {
        (self.household, self.role, self.permission) = (household, role, permission)
    }
}

/// What decides an account's access to a household: its owner and the account's
/// participant row, if it was ever invited.
package struct AccessRecord: Sendable, Equatable {
    package var ownerAccountId: String
    package var status: Participant.Status?
    package var permission: Membership.Permission?
    /// Whether the participant ever accepted (a revoked or departed one who never did was
    /// never a member).
    package var everAccepted: Bool

    @usableFromInline package init(ownerAccountId: String, status: Participant.Status? = nil, permission: Membership.Permission? = nil,
                 everAccepted: Bool) {
        (self.ownerAccountId, self.status, self.permission) = (ownerAccountId, status, permission)
        self.everAccepted = everAccepted
    }
}

/// A participant of a household's share, with its account.
package struct Participant: Sendable, Equatable {
    /// Where the participant stands, as stored and as answered.
    package enum Status: String, Sendable {
        case invited, accepted, declined, revoked, left

        /// Invited or accepted: the participant still holds (or may still take) access.
        package var isActive: Bool { self == .invited || self == .accepted }
    }

    package var householdId: String
    package var accountId: String
    package var handle: String
    package var displayName: String
    package var permission: Membership.Permission
    package var status: Status
    package var invitationId: String
    package var invitedAt: Int64

    @usableFromInline package init(householdId: String, accountId: String, handle: String, displayName: String,
                 permission: Membership.Permission, status: Status, invitationId: String, invitedAt: Int64) {
        (self.householdId, self.accountId, self.handle, self.displayName) = (householdId, accountId, handle, displayName)
        (self.permission, self.status, self.invitationId, self.invitedAt) = (permission, status, invitationId, invitedAt)
    }
}

/// An invitation addressed to the caller.
package struct Invitation: Sendable, Equatable {
    package var id: String
    package var householdId: String
    package var householdName: String
    package var ownerDisplayName: String
    package var permission: Membership.Permission
    package var invitedAt: Int64

    @usableFromInline package init(id: String, householdId: String, householdName: String, ownerDisplayName: String,
                 permission: Membership.Permission, invitedAt: Int64) {
        (self.id, self.householdId, self.householdName) = (id, householdId, householdName)
        (self.ownerDisplayName, self.permission, self.invitedAt) = (ownerDisplayName, permission, invitedAt)
    }
}

/// Where a list of pending invitations (newest first) continues: after the invitation
/// with this time and row order.
package struct InvitationPosition: Sendable, Equatable {
    package var invitedAt: Int64
    package var order: Int64

    @usableFromInline package init(invitedAt: Int64, order: Int64) {
        (self.invitedAt, self.order) = (invitedAt, order)
    }
}

/// Pending invitations the quotas count: those sent from the inviter's households, those
/// waiting for the invitee, and those of the first waiting for the second.
package struct PendingInvitationCounts: Sendable, Equatable {
    package var byInviter: Int64
    package var toInvitee: Int64
    package var byInviterToInvitee: Int64 = 0

    @usableFromInline package init(byInviter: Int64, toInvitee: Int64, byInviterToInvitee: Int64 = 0) {
        (self.byInviter, self.toInvitee, self.byInviterToInvitee) = (byInviter, toInvitee, byInviterToInvitee)
    }
}

/// The caps on pending invitations (0: none).
package struct InvitationLimits: Sendable, Equatable {
    package var perInviter = 0
    package var perInvitee = 0
    /// How many of one invitee's pending invitations one inviter may hold, so that a
    /// stranger's flood cannot take every slot the invitee has.
    package var perInviterForInvitee = 0

    @usableFromInline package init(perInviter: Int = 0, perInvitee: Int = 0, perInviterForInvitee: Int = 0) {
        (self.perInviter, self.perInvitee, self.perInviterForInvitee) = (perInviter, perInvitee, perInviterForInvitee)
    }
}

/// An account the caller blocked: its invitations to the caller are refused.
package struct BlockRecord: Sendable, Equatable {
    package var accountId: String
    package var handle: String
    package var displayName: String
    package var createdAt: Int64

    @usableFromInline package init(accountId: String, handle: String, displayName: String, createdAt: Int64) {
        (self.accountId, self.handle, self.displayName, self.createdAt) = (accountId, handle, displayName, createdAt)
    }
}

/// Where a list ordered by (time, id) continues: after (or, newest first, before) the row
/// with this time and id.
package struct TimeAndIdPosition: Sendable, Equatable {
    package var time: Int64
    package var id: String

    @usableFromInline package init(time: Int64, id: String) {
        (self.time, self.id) = (time, id)
    }
}

/// Where the devices of `GET …/sync-status` continue: after this (account, token) pair.
package struct DevicePosition: Sendable, Equatable {
    package var accountId: String
    package var tokenId: String

    @usableFromInline package init(accountId: String, tokenId: String) {
        (self.accountId, self.tokenId) = (accountId, tokenId)
    }
}

/// One page of a list and the position to continue from (nil: the last page).
package struct KeyedPage<Item: Sendable & Equatable, Position: Sendable & Equatable>: Sendable, Equatable {
    package var items: [Item]
    package var next: Position?

    @usableFromInline package init(items: [Item], next: Position? = nil) {
        (self.items, self.next) = (items, next)
    }
}

/// A household's feed position.
package struct FeedHead: Sendable, Equatable {
    package var seq: Int64
    package var incarnation: Int64
    /// The database's incarnation (`database_incarnation`): new after a restore or a rewind.
    package var database: Int64

    @usableFromInline package init(seq: Int64, incarnation: Int64, database: Int64 = 0) {
        (self.seq, self.incarnation, self.database) = (seq, incarnation, database)
    }
}

/// Children and transactions of the change feed, each kind oldest change first, with the
/// sequence value of each record's last change (`childSeqs[i]` is `children[i]`'s). Kept
/// as parallel arrays so that paging cuts them in place, without copying a record.
package struct FeedChanges: Sendable {
    package var children: [Child] = []
    package var childSeqs: [Int64] = []
    package var transactions: [LedgerTransaction] = []
    package var transactionSeqs: [Int64] = []
    /// Schedules changed (deleted ones included, as tombstones).
    package var schedules: [ScheduleRecord] = []
    package var scheduleSeqs: [Int64] = []
    /// Children's requests changed.
    package var requests: [RequestRecord] = []
    package var requestSeqs: [Int64] = []

    @usableFromInline package init(children: [Child] = [], childSeqs: [Int64] = [], transactions: [LedgerTransaction] = [],
                 transactionSeqs: [Int64] = [], schedules: [ScheduleRecord] = [], scheduleSeqs: [Int64] = [],
                 requests: [RequestRecord] = [], requestSeqs: [Int64] = []) {
        (self.children, self.childSeqs, self.transactions) = (children, childSeqs, transactions)
        self.transactionSeqs = transactionSeqs
        (self.schedules, self.scheduleSeqs) = (schedules, scheduleSeqs)
        (self.requests, self.requestSeqs) = (requests, requestSeqs)
    }

    package var count: Int { children.count + transactions.count + schedules.count + requests.count }

    /// The sequence values of the first `limit` changes in feed order (by sequence value;
    /// children, then transactions, then schedules within one).
    package func mergedSeqs(limit: Int) -> [Int64] {
        let out = FeedChanges.merge(childSeqs, transactionSeqs, limit: limit)
        // Schedules change seldom: merged into the first two's order afterwards.
        let planned = scheduleSeqs.isEmpty ? out : FeedChanges.merge(out, scheduleSeqs, limit: limit)
        return requestSeqs.isEmpty ? planned : FeedChanges.merge(planned, requestSeqs, limit: limit)
    }

    /// The first `limit` values of two ascending lists, merged (`a`'s first among equals).
    static func merge(_ a: [Int64], _ b: [Int64], limit: Int) -> [Int64] {
        var out: [Int64] = []
        out.reserveCapacity(min(limit, a.count + b.count))
        var i = 0, j = 0
        while out.count < limit && (i < a.count || j < b.count) {
            if j >= b.count || (i < a.count && a[i] <= b[j]) {
                out.append(a[i]); i += 1
            } else {
                out.append(b[j]); j += 1
            }
        }
        return out
    }

    /// Drops the changes after sequence value `seq`.
    package mutating func keep(through seq: Int64) {
        let kids = childSeqs.count - (childSeqs.lastIndex { $0 <= seq }.map { $0 + 1 } ?? 0)
        children.removeLast(kids); childSeqs.removeLast(kids)
        let txs = transactionSeqs.count - (transactionSeqs.lastIndex { $0 <= seq }.map { $0 + 1 } ?? 0)
        transactions.removeLast(txs); transactionSeqs.removeLast(txs)
        let plans = scheduleSeqs.count - (scheduleSeqs.lastIndex { $0 <= seq }.map { $0 + 1 } ?? 0)
        schedules.removeLast(plans); scheduleSeqs.removeLast(plans)
        let asked = requestSeqs.count - (requestSeqs.lastIndex { $0 <= seq }.map { $0 + 1 } ?? 0)
        requests.removeLast(asked); requestSeqs.removeLast(asked)
    }

    /// Only what a child's device may see: that child, its transactions, schedules and
    /// requests (the sequence values stay, so paging is the household feed's). False when
    /// the changes hold a kind of record this does not filter (`count` counts more than the
    /// four kinds): the child's feed then refuses to answer rather than send it unfiltered.
    /// A new record kind in the feed must be filtered here.
    package mutating func keep(child: String) -> Bool {
        func filter<T>(_ items: inout [T], _ seqs: inout [Int64], _ keep: (T) -> Bool) {
            var i = 0
            for j in items.indices where keep(items[j]) {
                items.swapAt(i, j); seqs.swapAt(i, j); i += 1
            }
            items.removeLast(items.count - i); seqs.removeLast(seqs.count - i)
        }
        filter(&children, &childSeqs) { $0.id == child }
        filter(&transactions, &transactionSeqs) { $0.childId == child }
        filter(&schedules, &scheduleSeqs) { $0.childId == child }
        filter(&requests, &requestSeqs) { $0.childId == child }
        return count == children.count + transactions.count + schedules.count + requests.count
    }
}

/// One page of a household's change feed, read in one snapshot.
package struct FeedPage: Sendable {
    package var household: HouseholdRecord
    package var membership: Membership
    package var children: [Child]
    package var transactions: [LedgerTransaction]
    package var schedules: [ScheduleRecord] = []
    package var requests: [RequestRecord] = []
    /// The child of a child's feed (nil: the household's feed).
    package var child: String?
    /// Where the page ends.
    package var next: SyncPosition
    /// The position the page started after (0 for a full pull).
    package var since: Int64
    package var moreComing: Bool

    @usableFromInline package init(household: HouseholdRecord, membership: Membership, children: [Child], transactions: [LedgerTransaction],
                 next: SyncPosition, since: Int64, moreComing: Bool) {
        (self.household, self.membership, self.children) = (household, membership, children)
        (self.transactions, self.next, self.since, self.moreComing) = (transactions, next, since, moreComing)
    }

    package var records: Int { children.count + transactions.count + schedules.count + requests.count }
    /// Whether the household changed after `since`.
    package var hasNews: Bool { next.seq > since || records > 0 }
}

/// A device's sync progress in one household.
package struct DeviceSyncRecord: Sendable, Equatable {
    package var tokenId: String
    package var accountId: String
    package var deviceName: String
    package var lastPullAt: Int64?
    package var lastPushAt: Int64?
    /// Records changed after the device's last pull.
    package var changesBehind: Int64

    @usableFromInline package init(tokenId: String, accountId: String, deviceName: String, lastPullAt: Int64? = nil,
                 lastPushAt: Int64? = nil, changesBehind: Int64) {
        (self.tokenId, self.accountId, self.deviceName, self.lastPullAt) = (tokenId, accountId, deviceName, lastPullAt)
        (self.lastPushAt, self.changesBehind) = (lastPushAt, changesBehind)
    }
}

/// `GET …/sync-status`, read in one snapshot: one page of its devices.
package struct SyncStatusReport: Sendable {
    /// The household's feed position now.
    package var latest: SyncPosition
    package var membership: Membership
    package var devices: [DeviceSyncRecord]
    /// Where the next page of devices starts (nil: this is the last).
    package var next: DevicePosition? = nil

    @usableFromInline package init(latest: SyncPosition, membership: Membership, devices: [DeviceSyncRecord], next: DevicePosition? = nil) {
        (self.latest, self.membership, self.devices, self.next) = (latest, membership, devices, next)
    }
}

/// A write that may have found its record already there.
package enum Written<Record: Sendable>: Sendable {
    case created(Record)
    case existing(Record)

    package var record: Record {
        switch self {
        case .created(let r), .existing(let r): return r
        }
    }
    package var isCreated: Bool { if case .created = self { true } else { false } }
}

/// A transaction written (or found already written) and its child's balance after it.
///
/// A class: the answer passes from the writer to the request through several generic
/// hops (result slot, completion, `Result` mappings), and each copy of a struct holding a
/// transaction's eleven strings retains every one of them.
package final class TransactionWrite: Sendable, Equatable {
    package let transaction: LedgerTransaction
    package let balanceCents: Int64
    /// false: an identical record was already there (an idempotent replay).
    package let saved: Bool

    @usableFromInline package init(transaction: LedgerTransaction, balanceCents: Int64, saved: Bool) {
        self.transaction = transaction
        self.balanceCents = balanceCents
        self.saved = saved
    }

    package static func == (a: TransactionWrite, b: TransactionWrite) -> Bool {
        a.transaction == b.transaction && a.balanceCents == b.balanceCents && a.saved == b.saved
    }
}
