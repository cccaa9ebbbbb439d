import Foundation
import LedgerModel

/// The write-side rules, written once over the primitives every backend provides. Each
/// checks everything before it writes, so a refusal leaves nothing behind.
extension LedgerWriting {
    // MARK: accounts and tokens

    /// A new account with its first token; the token's secret is returned once.
    package func createAccount(handle: String, displayName: String, deviceName: String, now: Int64) throws -> (AccountRecord, IssuedToken) {
        // A deleted account's handle stays taken for 30 days (`AccountRecord.retiredHandleMs`).
        if try accountId(handle: handle) != nil || isHandleRetired(handle, now: now) { throw LedgerStorageError.handleTaken(handle) }
        let account = AccountRecord(id: UUID().lowercased, handle: handle, displayName: displayName, createdAt: now)
        try insertAccount(account)
        return (account, try createToken(account: account.id, deviceName: deviceName, now: now))
    }

    /// A new token of `account`, unless it holds `maxTokens` live ones already
    /// (`tooManyTokens`; 0: no cap). Every path that makes a token comes here.
    package func createToken(account: String, deviceName: String, maxTokens: Int = 0, now: Int64) throws -> IssuedToken {
        if maxTokens > 0 {
            try lockAccounts([account])
            if try activeTokenCount(account: account) >= maxTokens { throw LedgerStorageError.tooManyTokens(limit: maxTokens) }
        }
        let secret = TokenSecret.generate()
        let record = TokenRecord(id: UUID().lowercased, accountId: account, deviceName: deviceName, createdAt: now, lastUsedAt: nil)
        try insertToken(record, hash: TokenSecret.sha256(secret))
        return IssuedToken(record: record, secret: secret)
    }

    // MARK: households

    /// POST (`ifAbsentOnly`: any existing id is a conflict) or PUT (the owner's existing
    /// household is answered as it is; another account's is a conflict).
    /// A new household counts against `maxHouseholds` (0: no limit).
    package func createHousehold(id: String, name: String, currency: String, owner: String, ifAbsentOnly: Bool,
                         maxHouseholds: Int = 0, now: Int64) throws -> Written<HouseholdRecord> {
        if let existing = try household(id: id) {
            if ifAbsentOnly { throw LedgerStorageError.householdIdTaken(id) }
            guard existing.ownerAccountId == owner else { throw LedgerStorageError.householdOfAnotherAccount(id) }
            return .existing(existing)
        }
        if maxHouseholds > 0, try householdCount(owner: owner) >= maxHouseholds {
            throw LedgerStorageError.tooManyHouseholds(limit: maxHouseholds)
        }
        let h = HouseholdRecord(id: id, name: name, currency: currency, ownerAccountId: owner, createdAt: now,
                                modifiedAt: now, changeTag: ChangeTag.of(1), shared: false)
        try insertHousehold(h, incarnation: Int64.random(in: 1...Int64(Int32.max)))
        return .created(h)
    }

    /// PATCH: renames and/or changes the currency when `matches` accepts the current tag.
    package func updateHousehold(id: String, account: String, matches: (String) -> Bool, name: String?, currency: String?,
                         now: Int64) throws -> (HouseholdRecord, Membership) {
        let (h, m) = try household(id: id, account: account, need: .write)
        guard matches(h.changeTag) else {
            throw LedgerStorageError.preconditionFailed(currentTag: h.changeTag, current: h.json(m))
        }
        if name == nil && currency == nil { return (h, m) }
        let seq = try nextSeq(household: id)
        try updateHousehold(id: id, name: name ?? h.name, currency: currency ?? h.currency, shared: h.shared,
                            modifiedAt: now, seq: seq)
        guard let updated = try household(id: id) else { throw LedgerStorageError.householdNotFound }
        return (updated, m)
    }

    package func deleteHousehold(id: String, account: String) throws {
        _ = try membership(household: id, account: account, need: .owner)
        try deleteHousehold(id: id)
    }

    // MARK: children

    /// POST …/children: the same id with the same name (and sort order, when given) is the
    /// same child; a different one is a conflict. New children go after the last, and
    /// count against `maxChildren` (0: no limit).
    package func createChild(household: String, account: String, id: String, name: String, sortOrder: Int64?,
                     maxChildren: Int = 0, now: Int64) throws -> Written<Child> {
        _ = try membership(household: household, account: account, need: .write)
        if let existing = try child(household: household, id: id) {
            guard existing.name == name, sortOrder == nil || sortOrder == existing.sortOrder else {
                throw LedgerStorageError.childIdTaken(id)
            }
            return .existing(existing)
        }
        if maxChildren > 0, try childCount(household: household) >= maxChildren {
            throw LedgerStorageError.tooManyChildren(limit: maxChildren)
        }
        let order = try sortOrder ?? children(household: household, includeArchived: true).map(\.sortOrder).max()
            .map { $0 == Int64.max ? $0 : $0 + 1 } ?? 0
        let seq = try nextSeq(household: household)
        let c = Child(id: id, householdId: household, name: name, sortOrder: order, archived: false, createdAt: now,
                      modifiedAt: now, modifiedBy: account, changeTag: ChangeTag.of(seq), balanceCents: 0)
        try insertChild(c, seq: seq)
        return .created(c)
    }

    /// PATCH …/children/{id} when `matches` accepts the current tag.
    package func updateChild(household: String, account: String, id: String, matches: (String) -> Bool, name: String?,
                     sortOrder: Int64?, archived: Bool?, now: Int64) throws -> Child {
        _ = try membership(household: household, account: account, need: .write)
        guard var c = try child(household: household, id: id) else { throw LedgerStorageError.childNotFound }
        guard matches(c.changeTag) else { throw LedgerStorageError.preconditionFailed(currentTag: c.changeTag, current: c.json) }
        let newName = name ?? c.name, newOrder = sortOrder ?? c.sortOrder, newArchived = archived ?? c.archived
        if newName == c.name && newOrder == c.sortOrder && newArchived == c.archived { return c }
        let seq = try nextSeq(household: household)
        c.name = newName; c.sortOrder = newOrder; c.archived = newArchived
        c.modifiedAt = LWW.stamp(now: now, newestSeen: c.modifiedAt)
        c.modifiedBy = account
        c.changeTag = ChangeTag.of(seq)
        try updateChild(c, seq: seq)
        return c
    }

    /// A pushed child: new id → saved (`tooManyChildren` when the household already holds
    /// `maxChildren`, 0: no cap); same content → unchanged; base tag matches → saved; else a
    /// conflict with the server's record. The caller checked write access and attribution.
    package func pushChild(household: String, _ r: PushBatch.ChildRecord, maxChildren: Int = 0) throws -> PushedChild {
        guard var current = try child(household: household, id: r.id) else {
            if maxChildren > 0, try childCount(household: household) >= maxChildren {
                throw LedgerStorageError.tooManyChildren(limit: maxChildren)
            }
            let seq = try nextSeq(household: household)
            let c = Child(id: r.id, householdId: household, name: r.name, sortOrder: r.sortOrder, archived: r.archived,
                          createdAt: r.createdAt, modifiedAt: r.modifiedAt, modifiedBy: r.modifiedBy,
                          changeTag: ChangeTag.of(seq), balanceCents: 0)
            try insertChild(c, seq: seq)
            return .saved(changeTag: c.changeTag)
        }
        if current.name == r.name && current.sortOrder == r.sortOrder && current.archived == r.archived {
            return .unchanged(changeTag: current.changeTag)
        }
        guard r.baseChangeTag == current.changeTag else { return .conflict(current) }
        let seq = try nextSeq(household: household)
        current.name = r.name; current.sortOrder = r.sortOrder; current.archived = r.archived
        current.modifiedAt = r.modifiedAt; current.modifiedBy = r.modifiedBy
        current.changeTag = ChangeTag.of(seq)
        try updateChild(current, seq: seq)
        return .saved(changeTag: current.changeTag)
    }

    // MARK: transactions

    /// Insert-if-absent with every ledger rule: an identical replay answers the stored
    /// record; a different record with the id, an id reserved for another transaction's
    /// reversal, an inconsistent reversal or a balance outside 64 bits is refused. Updates
    /// the cached balance; a reversal also marks its target (two changes, in that order,
    /// so the feed can page between them). The caller checked write access (once for a
    /// whole push).
    /// `checkingAccess`: the author's standing is checked first (read with the idempotency
    /// lookup: over PostgreSQL one round trip for both).
    package func addTransaction(household: String, author: String, _ t: NewTransaction, now: Int64,
                        checkingAccess need: Membership.Need? = nil) throws -> TransactionWrite {
        if let pot = t.potId, pot == PotRecord.defaultId(child: t.childId) {
            // The default pot named: stored as nil, like a transaction that names none.
            var t = t
            t.potId = nil
            return try addTransaction(household: household, author: author, t, now: now, checkingAccess: need)
        }
        if t.reversesId == nil, t.potId == nil, !t.mayBeReservedId, insertsBeforeLookup(household: household) {
            // The common write, a new transaction: inserted where its key is free, which
            // the insert finds out anyway, without looking the id up first. Anything else
            // (a replay, a taken id, no such child, a balance out of range) takes the full
            // path below, with nothing written: its answers come in the same order.
            if let need {
                _ = try Self.membership(try accessRecord(household: household, account: author), household: household,
                                        account: author, need: need)
            }
            if let current = try balance(household: household, child: t.childId),
               let balance = Cents.add(current, t.amountCents) {
                let saved = t.record(household: household, author: author, now: now)
                if try insertTransactionIfAbsent(saved, reversalId: t.reversalId) {
                    try setBalance(household: household, child: t.childId, cents: balance)
                    return TransactionWrite(transaction: saved, balanceCents: balance, saved: true)
                }
            }
        }
        return try addTransactionLookingUp(household: household, author: author, t, now: now, checkingAccess: need)
    }

    /// `addTransaction` past its common case: the id looked up first (a copy of `t` made
    /// here, where a reversal takes its target's pot, not on the common path).
    private func addTransactionLookingUp(household: String, author: String, _ t: NewTransaction, now: Int64,
                                         checkingAccess need: Membership.Need?) throws -> TransactionWrite {
        var t = t
        let found: LedgerTransaction?, childBalance: Int64?
        if let need {
            let (access, tx, balance) = try accessAndTransaction(household: household, account: author, id: t.id,
                                                                 reversalId: t.reversalId, child: t.childId)
            _ = try Self.membership(access, household: household, account: author, need: need)
            (found, childBalance) = (tx, balance)
        } else {
            (found, childBalance) = try transactionAndBalance(household: household, id: t.id, reversalId: t.reversalId,
                                                              child: t.childId)
        }
        if let existing = found {
            let same: Bool
            if let rev = t.reversesId {
                // Reversals are derived records: the same target, child and amount is the same record.
                same = existing.reversesId == rev && existing.childId == t.childId && existing.amountCents == t.amountCents
            } else {
                same = existing.reversesId == nil && existing.childId == t.childId && existing.amountCents == t.amountCents
                    && existing.note == t.note && existing.source == t.source && existing.potId == t.potId
                    && (t.createdAt == nil || t.createdAt == existing.createdAt)
            }
            guard same else { throw LedgerStorageError.transactionIdTaken(existing) }
            let stored = childBalance ?? 0   // the same record: the same child
            return TransactionWrite(transaction: existing, balanceCents: stored, saved: false)
        }
        if t.mayBeReservedId, let owner = try transaction(household: household, reservingReversalId: t.id) {
            // That id belongs to the undo of `owner`: taking it would block the undo for ever.
            throw LedgerStorageError.reversalIdReserved(t.id, of: owner)
        }
        if t.mayBeReservedId, try request(household: household, paymentId: t.id) != nil {
            // The payment of a request is written by its approval only (had it been approved,
            // the payment would be there and answered above).
            throw LedgerStorageError.requestNotApproved
        }
        guard let current = childBalance else { throw LedgerStorageError.childNotFound }
        if let rev = t.reversesId {
            guard let target = try transaction(household: household, id: rev) else { throw LedgerStorageError.transactionNotFound }
            if target.reversesId != nil { throw LedgerStorageError.notReversible }
            if let by = target.reversedById, let existing = try transaction(household: household, id: by) {
                throw LedgerStorageError.alreadyReversed(target: rev, by: existing)
            }
            let expected = NewTransaction.reversalId(of: rev)
            guard expected == t.id else { throw LedgerStorageError.reversalIdMismatch(expected: expected ?? "") }
            guard t.amountCents == -target.amountCents, t.childId == target.childId else {
                throw LedgerStorageError.reversalAmountMismatch(expected: target.amountCents)
            }
            // A reversal takes the money back from the pot it went to.
            t.potId = target.potId
        } else if let pot = t.potId {
            try checkPot(household: household, pot, child: t.childId)
        }
        guard let balance = Cents.add(current, t.amountCents) else { throw LedgerStorageError.balanceOverflow }
        var seq = try nextSeq(household: household)
        if let rev = t.reversesId {
            try markReversed(household: household, id: rev, by: t.id, seq: seq)
            seq = try nextSeq(household: household)
        }
        let saved = t.record(household: household, author: author, now: now)
        try insertTransaction(saved, reversalId: t.reversalId, seq: seq)
        try setBalance(household: household, child: t.childId, cents: balance)
        return TransactionWrite(transaction: saved, balanceCents: balance, saved: true)
    }

    /// POST …/transactions/{id}/reversal: an existing reversal is answered as it is.
    package func reverse(household: String, author: String, transaction id: String, now: Int64) throws -> TransactionWrite {
        _ = try membership(household: household, account: author, need: .write)
        guard let target = try transaction(household: household, id: id) else { throw LedgerStorageError.transactionNotFound }
        if target.reversesId != nil { throw LedgerStorageError.notReversible }
        if let by = target.reversedById, let existing = try transaction(household: household, id: by) {
            let balance = try child(household: household, id: existing.childId)?.balanceCents ?? 0
            return TransactionWrite(transaction: existing, balanceCents: balance, saved: false)
        }
        return try addTransaction(household: household, author: author, NewTransaction.reversal(of: target), now: now)
    }

    /// POST …/undo-last: reverses the child's newest undoable transaction, only if it is
    /// `expected` (when given).
    package func undoLast(household: String, author: String, child: String, expected: String?, now: Int64) throws -> TransactionWrite {
        _ = try membership(household: household, account: author, need: .write)
        guard try self.child(household: household, id: child) != nil else { throw LedgerStorageError.childNotFound }
        guard let target = try newestUndoable(household: household, child: child) else { throw LedgerStorageError.nothingToUndo }
        if let expected, expected != target.id { throw LedgerStorageError.undoTargetChanged(current: target, expected: expected) }
        return try addTransaction(household: household, author: author, NewTransaction.reversal(of: target), now: now)
    }

    // MARK: sharing

    /// Shares the household (the owner only); `.existing` when it already was.
    package func share(household: String, owner: String) throws -> Written<[Participant]> {
        _ = try membership(household: household, account: owner, need: .owner)
        guard let h = try self.household(id: household) else { throw LedgerStorageError.householdNotFound }
        if h.shared { return .existing(try participants(household: household)) }
        try setShared(h, true)
        return .created(try participants(household: household))
    }

    /// Ends the share: every invited or accepted participant is revoked.
    package func unshare(household: String, owner: String, now: Int64) throws {
        _ = try membership(household: household, account: owner, need: .owner)
        guard let h = try self.household(id: household), h.shared else { throw LedgerStorageError.notShared }
        try revokeParticipants(household: household, at: now)
        try setShared(h, false)
    }

    private func setShared(_ h: HouseholdRecord, _ shared: Bool) throws {
        let seq = try nextSeq(household: h.id)
        try updateHousehold(id: h.id, name: h.name, currency: h.currency, shared: shared, modifiedAt: h.modifiedAt, seq: seq)
    }

    /// Invites `handle`: an invited or accepted participant is answered unchanged; a
    /// declined, revoked or departed one gets a new invitation, within `limits` on the
    /// invitations pending from the owner, for the invitee, and from the owner for the
    /// invitee. An invitee who blocked the owner is refused as an unknown handle would be.
    package func invite(household: String, owner: String, handle: String, permission: Membership.Permission,
                limits: InvitationLimits = InvitationLimits(), now: Int64) throws -> Written<Participant> {
        // Both accounts before the household (the order of every write that holds both),
        // so a block or another invitation made meanwhile is seen; the refusals still come
        // in their order below.
        let found = try accountId(handle: handle)
        if let found, found != owner { try lockAccounts([owner, found]) }
        _ = try membership(household: household, account: owner, need: .owner)
        guard let h = try self.household(id: household), h.shared else { throw LedgerStorageError.shareRequired }
        guard let account = found else { throw LedgerStorageError.unknownHandle(handle) }
        if account == owner { throw LedgerStorageError.cannotInviteSelf }
        let existing = try participant(household: household, account: account)
        if let existing, existing.status.isActive { return .existing(existing) }
        if try isBlocked(account: account, blocked: owner) { throw LedgerStorageError.unknownHandle(handle) }
        if limits.perInviter > 0 || limits.perInvitee > 0 || limits.perInviterForInvitee > 0 {
            let pending = try pendingInvitationCounts(inviter: owner, invitee: account)
            if limits.perInviter > 0, pending.byInviter >= limits.perInviter {
                throw LedgerStorageError.tooManyInvitations(.inviter, limit: limits.perInviter, pending: pending.byInviter)
            }
            if limits.perInviterForInvitee > 0, pending.byInviterToInvitee >= limits.perInviterForInvitee {
                throw LedgerStorageError.tooManyInvitations(.inviterForInvitee, limit: limits.perInviterForInvitee,
                                                            pending: pending.byInviterToInvitee)
            }
            if limits.perInvitee > 0, pending.toInvitee >= limits.perInvitee {
                throw LedgerStorageError.tooManyInvitations(.invitee, limit: limits.perInvitee, pending: pending.toInvitee)
            }
        }
        if existing != nil {
            try updateParticipant(household: household, account: account, status: .invited, permission: permission,
                                  newInvitation: UUID().lowercased, at: now)
        } else {
            try insertParticipant(household: household, account: account, permission: permission,
                                  invitation: UUID().lowercased, at: now)
        }
        _ = try nextSeq(household: household)
        guard let p = try participant(household: household, account: account) else { throw LedgerStorageError.participantNotFound }
        return .created(p)
    }

    /// Changes an active participant's permission (the owner only).
    package func setPermission(household: String, owner: String, account: String, permission: Membership.Permission,
                       now: Int64) throws -> Participant {
        _ = try membership(household: household, account: owner, need: .owner)
        guard let p = try participant(household: household, account: account), p.status.isActive else {
            throw LedgerStorageError.participantNotFound
        }
        if p.permission == permission { return p }
        try changeStatus(household: household, account: account, status: p.status, permission: permission, now: now)
        guard let updated = try participant(household: household, account: account) else { throw LedgerStorageError.participantNotFound }
        return updated
    }

    /// A participant leaves (`account` is the caller) or the owner revokes them; already
    /// inactive participants stay as they are.
    package func removeParticipant(household: String, caller: String, account: String, now: Int64) throws {
        if account == caller, let me = try participant(household: household, account: account), me.status.isActive {
            try changeStatus(household: household, account: account, status: .left, now: now)
            return
        }
        _ = try membership(household: household, account: caller, need: .owner)
        guard let p = try participant(household: household, account: account) else { throw LedgerStorageError.participantNotFound }
        if p.status.isActive { try changeStatus(household: household, account: account, status: .revoked, now: now) }
    }

    /// Accepts an invitation addressed to `account` (accepting twice is fine).
    package func acceptInvitation(_ invitation: String, account: String, now: Int64) throws -> (HouseholdRecord, Membership) {
        guard let p = try participant(invitation: invitation, account: account),
              p.status == .invited || p.status == .accepted else { throw LedgerStorageError.invitationNotFound }
        if p.status == .invited { try changeStatus(household: p.householdId, account: account, status: .accepted, now: now) }
        return try household(id: p.householdId, account: account, need: .read)
    }

    /// Declines an invitation addressed to `account` (declining twice is fine). `block`:
    /// `account` also blocks the household's owner, whose other pending invitations to
    /// `account` are declined with it, and whose new ones are refused from then on.
    package func declineInvitation(_ invitation: String, account: String, block: Bool = false, now: Int64) throws {
        // The invitee's account before any household, as an invitation takes them.
        if block { try lockAccounts([account]) }
        guard let p = try participant(invitation: invitation, account: account),
              p.status == .invited || p.status == .declined else { throw LedgerStorageError.invitationNotFound }
        if p.status == .invited { try changeStatus(household: p.householdId, account: account, status: .declined, now: now) }
        guard block else { return }
        guard let inviter = try self.household(id: p.householdId)?.ownerAccountId else { throw LedgerStorageError.invitationNotFound }
        _ = try insertBlock(account: account, blocked: inviter, at: now)
        for other in try pendingInvitationHouseholds(inviter: inviter, invitee: account) {
            try changeStatus(household: other, account: account, status: .declined, now: now)
        }
    }

    /// Lifts `account`'s block of `blocked`; `blockNotFound` when there is none.
    package func unblock(account: String, blocked: String) throws {
        guard try deleteBlock(account: account, blocked: blocked) else { throw LedgerStorageError.blockNotFound }
    }

    /// A participant change members can see: the feed reports the new `access`.
    private func changeStatus(household: String, account: String, status: Participant.Status,
                              permission: Membership.Permission? = nil, now: Int64) throws {
        try updateParticipant(household: household, account: account, status: status, permission: permission,
                              newInvitation: nil, at: now)
        _ = try nextSeq(household: household)
    }
}

/// A token as issued: its record and its secret, shown once.
package struct IssuedToken: Sendable, Equatable {
    package var record: TokenRecord
    package var secret: String

    package init(record: TokenRecord, secret: String) {
        (self.record, self.secret) = (record, secret)
    }
}

/// What a pushed child came to.
package enum PushedChild: Sendable, Equatable {
    case saved(changeTag: String)
    case unchanged(changeTag: String)
    case conflict(Child)
}

extension HouseholdRecord {
    /// The API JSON form as `m` sees it.
    package func json(_ m: Membership) -> JSONValue {
        .object([
            "id": .string(id), "name": .string(name), "currency": .string(currency), "ownerAccountId": .string(ownerAccountId),
            "createdAt": .string(Timestamp.format(ms: createdAt)), "modifiedAt": .string(Timestamp.format(ms: modifiedAt)),
            "changeTag": .string(changeTag), "role": .string(m.role.rawValue), "permission": .string(m.permission.rawValue),
            "shared": .bool(shared),
        ])
    }
}
