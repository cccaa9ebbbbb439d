import LedgerModel

/// The read-side rules, written once over the primitives every backend provides.
extension LedgerReading {
    /// API.md's access rules: non-members get `householdNotFound` (existence is not
    /// revealed), revoked or departed members `accessRevoked`, read-only participants
    /// `readOnly` on writes, `ownerOnly` for the owner's operations. Invitees who have not
    /// accepted are not members, also after their invitation was withdrawn or they left
    /// before accepting.
    func membership(household: String, account: String, need: Membership.Need) throws -> Membership {
        guard let r = try accessRecord(household: household, account: account) else {
            throw LedgerStorageError.householdNotFound
        }
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
    func household(id: String, account: String, need: Membership.Need) throws -> (HouseholdRecord, Membership) {
        let m = try membership(household: id, account: account, need: need)
        guard let h = try household(id: id) else { throw LedgerStorageError.householdNotFound }
        return (h, m)
    }

    /// The participants of a household's share, for a member; `notShared` when it is not shared.
    func share(household: String, account: String) throws -> [Participant] {
        _ = try membership(household: household, account: account, need: .read)
        guard let h = try self.household(id: household), h.shared else { throw LedgerStorageError.notShared }
        return try participants(household: household)
    }

    /// One page of the change feed after `since` (nil: from the beginning), cut by `FeedPaging`.
    func feedPage(household: String, account: String, since: String?, limit: Int) throws -> FeedPage {
        let (h, m) = try self.household(id: household, account: account, need: .read)
        guard let head = try head(household: household) else { throw LedgerStorageError.householdNotFound }
        var after: Int64 = 0
        if let since {
            guard let t = SyncToken.decode(since), t.household == household, t.incarnation == head.incarnation,
                  t.seq <= head.seq else { throw LedgerStorageError.syncTokenExpired }
            after = t.seq
        }
        let (entries, endSeq, moreComing) = try FeedPaging.page(
            changes(household: household, after: after, onlySeq: nil, limit: limit + 1), limit: limit, headSeq: head.seq,
            seq: \.seq
        ) { s in try changes(household: household, after: s - 1, onlySeq: s, limit: Int.max) }
        var kids: [Child] = [], txs: [LedgerTransaction] = []
        for e in entries {
            switch e {
            case .child(let c, _): kids.append(c)
            case .transaction(let t, _): txs.append(t)
            }
        }
        return FeedPage(household: h, membership: m, children: kids, transactions: txs,
                        nextToken: SyncToken(household: household, incarnation: head.incarnation, seq: endSeq),
                        since: after, moreComing: moreComing)
    }

    /// `GET …/sync-status` for a member.
    func syncStatus(household: String, account: String) throws -> SyncStatusReport {
        let m = try membership(household: household, account: account, need: .read)
        guard let head = try head(household: household) else { throw LedgerStorageError.householdNotFound }
        return SyncStatusReport(latestToken: SyncToken(household: household, incarnation: head.incarnation, seq: head.seq),
                                membership: m, devices: try devices(household: household))
    }
}
