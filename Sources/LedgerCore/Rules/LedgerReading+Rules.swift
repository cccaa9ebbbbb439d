import LedgerModel

/// The read-side rules, written once over the primitives every backend provides.
extension LedgerReading {
    /// API.md's access rules: non-members get `householdNotFound` (existence is not
    /// revealed), revoked or departed members `accessRevoked`, read-only participants
    /// `readOnly` on writes, `ownerOnly` for the owner's operations. Invitees who have not
    /// accepted are not members, also after their invitation was withdrawn or they left
    /// before accepting.
    package func membership(household: String, account: String, need: Membership.Need) throws -> Membership {
        try Self.membership(try accessRecord(household: household, account: account), household: household,
                            account: account, need: need)
    }

    /// `account`'s standing in the household from its access record (nil: no such household).
    package static func membership(_ record: AccessRecord?, household: String, account: String,
                           need: Membership.Need) throws -> Membership {
        guard let r = record else { throw LedgerStorageError.householdNotFound }
        if r.ownerAccountId == account {
            return Membership(householdId: household, role: .owner, permission: .readWrite, ownerAccountId: account)
        }
        switch r.status {
        case .accepted?:
            let m = Membership(householdId: household, role: .participant, permission: r.permission ?? .readOnly,
                               ownerAccountId: r.ownerAccountId)
            switch need {
            case .read: return m
            case .write: if !m.canWrite { throw LedgerStorageError.readOnly }; return m
            case .owner: throw LedgerStorageError.ownerOnly
            }
        case .revoked?, .left?:
            throw r.everAccepted ? LedgerStorageError.accessRevoked : LedgerStorageError.householdNotFound
        case .invited?, .declined?, nil:
            throw LedgerStorageError.householdNotFound
        }
    }

    /// The household as `account` sees it (its standing included).
    package func household(id: String, account: String, need: Membership.Need) throws -> (HouseholdRecord, Membership) {
        let m = try membership(household: id, account: account, need: need)
        guard let h = try household(id: id) else { throw LedgerStorageError.householdNotFound }
        return (h, m)
    }

    /// The participants of a household's share, for a member; `notShared` when it is not shared.
    package func share(household: String, account: String) throws -> [Participant] {
        _ = try membership(household: household, account: account, need: .read)
        guard let h = try self.household(id: household), h.shared else { throw LedgerStorageError.notShared }
        return try participants(household: household)
    }

    /// One page of the change feed after `since` (nil: from the beginning), cut by
    /// `FeedPaging`; `historyRewound` when `since` was handed out by an earlier incarnation of
    /// the database or lies ahead of the household's sequence (the server went back in time:
    /// the device must reconcile), `syncTokenExpired` when it is not a position of this
    /// household as it is now (re-created, another household, no position at all).
    package func feedPage(household: String, account: String, since: SyncPosition?, limit: Int) throws -> FeedPage {
        let (h, m) = try self.household(id: household, account: account, need: .read)
        return try feedPage(h, m, since: since, child: nil, limit: limit)
    }

    /// One page of a child's feed (`GET …/children/{childId}/changes`), for a child token of
    /// that child or a member: the household's feed with only that child's records (the
    /// child, its transactions, schedules and requests), paged by the same positions, so it
    /// is gap-free and resumable the same way; its positions name the child, and each feed
    /// refuses the other's (`syncTokenExpired`).
    package func childFeedPage(household: String, child: String, caller: Caller, since: SyncPosition?,
                               limit: Int) throws -> FeedPage {
        let m = try readAccess(household: household, caller: caller, child: child)
        guard let h = try self.household(id: household) else { throw LedgerStorageError.householdNotFound }
        guard try self.child(household: household, id: child) != nil else { throw LedgerStorageError.childNotFound }
        let seen = m ?? Membership(householdId: household, role: .participant, permission: .readOnly, ownerAccountId: "")
        return try feedPage(h, seen, since: since, child: child, limit: limit)
    }

    private func feedPage(_ h: HouseholdRecord, _ m: Membership, since: SyncPosition?, child: String?,
                          limit: Int) throws -> FeedPage {
        let household = h.id
        guard let head = try head(household: household) else { throw LedgerStorageError.householdNotFound }
        var after: Int64 = 0
        if let since {
            guard since.child == child else { throw LedgerStorageError.syncTokenExpired }
            try Self.check(since, household: household, head: head)
            after = since.seq
        }
        // Paging looks at sequence values only; the records are then cut in place.
        var records = try changes(household: household, after: after, onlySeq: nil, limit: limit + 1)
        var wholeCommit: FeedChanges?
        let (_, endSeq, moreComing) = try FeedPaging.page(records.mergedSeqs(limit: limit + 1), limit: limit,
                                                          headSeq: head.seq, seq: { $0 }) { s in
            let whole = try changes(household: household, after: s - 1, onlySeq: s, limit: Int.max)
            wholeCommit = whole
            return whole.mergedSeqs(limit: Int.max)
        }
        if let wholeCommit { records = wholeCommit } else { records.keep(through: endSeq) }
        if let child, !records.keep(child: child) { throw LedgerStorageError.unfilteredChildFeed }
        var page = FeedPage(household: h, membership: m, children: records.children, transactions: records.transactions,
                            next: SyncPosition(household: household, incarnation: head.incarnation, seq: endSeq,
                                               database: head.database, child: child),
                            since: after, moreComing: moreComing)
        page.schedules = records.schedules
        page.requests = records.requests
        page.child = child
        return page
    }

    /// Whether `since` is a position of the household as `head` describes it: an earlier
    /// database incarnation, or a sequence the household has not reached, is `historyRewound`;
    /// another household or household incarnation `syncTokenExpired`.
    package static func check(_ since: SyncPosition, household: String, head: FeedHead) throws {
        guard since.household == household else { throw LedgerStorageError.syncTokenExpired }
        if let database = since.database, database != head.database { throw LedgerStorageError.historyRewound }
        guard since.incarnation == head.incarnation else { throw LedgerStorageError.syncTokenExpired }
        guard since.seq <= head.seq else { throw LedgerStorageError.historyRewound }
    }

    /// A feed page for `caller`'s device, with its token checked in the same snapshot: a
    /// token revoked before anything on the page was written is seen revoked, so nothing
    /// written after a revocation goes out under it. A revoked token (`tokenRevoked`) wins
    /// over the feed's own refusals.
    package func feedPage(household: String, caller: Caller, since: SyncPosition?, limit: Int) throws -> FeedPage {
        let page: FeedPage
        do {
            page = try feedPage(household: household, account: caller.accountId, since: since, limit: limit)
        } catch {
            guard try isActive(token: caller.tokenId) else { throw LedgerStorageError.tokenRevoked }
            throw error
        }
        guard try isActive(token: caller.tokenId) else { throw LedgerStorageError.tokenRevoked }
        return page
    }

    /// `childFeedPage` with the token checked in the same snapshot (as `feedPage(household:caller:…)`).
    package func childFeedPage(household: String, child: String, checking caller: Caller, since: SyncPosition?,
                               limit: Int) throws -> FeedPage {
        let page: FeedPage
        do {
            page = try childFeedPage(household: household, child: child, caller: caller, since: since, limit: limit)
        } catch {
            guard try isActive(token: caller.tokenId) else { throw LedgerStorageError.tokenRevoked }
            throw error
        }
        guard try isActive(token: caller.tokenId) else { throw LedgerStorageError.tokenRevoked }
        return page
    }

    /// Whether a long-poll that read the feed up to `position` may go on waiting: nothing was
    /// committed to the household since (nor was it deleted or re-created), the device's
    /// token is active and the caller may still read the household.
    package func pollIsCurrent(household: String, caller: Caller, position: SyncPosition) throws -> Bool {
        guard let head = try head(household: household), head.seq == position.seq, head.incarnation == position.incarnation,
              position.database == nil || position.database == head.database,
              try isActive(token: caller.tokenId) else { return false }
        do {
            if caller.isChild {
                try readAccess(household: household, caller: caller)
            } else {
                _ = try membership(household: household, account: caller.accountId, need: .read)
            }
        } catch is LedgerStorageError {
            return false
        }
        return true
    }

    /// `GET …/sync-status` for a member: `limit` devices after the position `after`.
    package func syncStatus(household: String, account: String, after: DevicePosition? = nil, limit: Int = 100) throws -> SyncStatusReport {
        let m = try membership(household: household, account: account, need: .read)
        guard let head = try head(household: household) else { throw LedgerStorageError.householdNotFound }
        let page = try devices(household: household, after: after, limit: limit)
        return SyncStatusReport(latest: SyncPosition(household: household, incarnation: head.incarnation, seq: head.seq,
                                                     database: head.database),
                                membership: m, devices: page.items, next: page.next)
    }
}
