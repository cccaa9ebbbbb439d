import Foundation
import LedgerModel

/// The pot rules (`docs/allowance.md`, "Pots and transfers on the server"): every child has
/// a default pot (`ScheduleIDs.defaultPot`) that needs no row until it is edited; other pots
/// are rows of their own; a transaction names its pot (nil: the default pot); a pot's balance
/// is the sum of its transactions, so a child's balance is the sum of its pots.
extension LedgerReading {
    /// The pot `id` of the household as it stands — its row, or the default pot of one of
    /// its children before anyone edited it — when it is not deleted; nil otherwise.
    package func livePot(household: String, id: String) throws -> PotRecord? {
        if let p = try pot(household: household, id: id) { return p.deleted ? nil : p }
        for c in try children(household: household, includeArchived: true) where PotRecord.defaultId(child: c.id) == id {
            var p = PotRecord.defaultPot(of: c)
            p.balanceCents = try potBalance(household: household, child: c.id, pot: nil)
            return p
        }
        return nil
    }

    /// That `pot` (not the default pot's id) may take a transaction of `child`: it exists,
    /// is not deleted and is that child's.
    package func checkPot(household: String, _ pot: String, child: String) throws {
        guard let p = try self.pot(household: household, id: pot), !p.deleted else {
            // The default pot of another child has no row: still another child's.
            for c in try children(household: household, includeArchived: true) where PotRecord.defaultId(child: c.id) == pot {
                throw LedgerStorageError.potOfAnotherChild(pot)
            }
            throw LedgerStorageError.unknownPot(pot)
        }
        guard p.childId == child else { throw LedgerStorageError.potOfAnotherChild(pot) }
    }

    /// GET …/pots/{potId} for a member.
    package func readPot(household: String, account: String, id: String) throws -> PotRecord {
        _ = try membership(household: household, account: account, need: .read)
        guard let p = try livePot(household: household, id: id) else { throw LedgerStorageError.potNotFound }
        return p
    }

    /// GET …/children/{childId}/pots: the default pot first (on the first page), then the
    /// others by creation time and id.
    /// The pots an account's member reads (`listPots(household:caller:…)` for a device's caller).
    package func listPots(household: String, account: String, child childId: String, after: TimeAndIdPosition?,
                          limit: Int) throws -> KeyedPage<PotRecord, TimeAndIdPosition> {
        try listPots(household: household, caller: Caller(accountId: account, tokenId: ""), child: childId, after: after, limit: limit)
    }

    package func listPots(household: String, caller: Caller, child childId: String, after: TimeAndIdPosition?,
                          limit: Int) throws -> KeyedPage<PotRecord, TimeAndIdPosition> {
        _ = try readAccess(household: household, caller: caller, child: childId)
        guard let c = try child(household: household, id: childId) else { throw LedgerStorageError.childNotFound }
        let defaultId = PotRecord.defaultId(child: c.id)
        guard after == nil, let defaultId, let main = try livePot(household: household, id: defaultId) else {
            var page = try pots(household: household, child: childId, after: after, limit: limit)
            page.items.removeAll { $0.id == defaultId }
            return page
        }
        // The first page: the default pot, then up to `limit - 1` others.
        guard limit > 1 else {
            let more = try !pots(household: household, child: childId, after: nil, limit: 2).items.allSatisfy { $0.id == defaultId }
            return KeyedPage(items: [main], next: more ? PotRecord.beforeEveryPot : nil)
        }
        var page = try pots(household: household, child: childId, after: nil, limit: limit - 1)
        page.items.removeAll { $0.id == defaultId }
        page.items.insert(main, at: 0)
        return page
    }
}

extension LedgerWriting {
    /// POST …/children/{childId}/pots: the same id with the same content is the same pot
    /// (answered as it is); a different one, or a deleted one, is a conflict. The child's
    /// default pot's id makes its row (naming it).
    /// `maxPots` (0: none) caps the child's pots besides its default pot.
    package func createPot(household: String, account: String, _ d: PotDraft, maxPots: Int = 0, now: Int64) throws -> PotWrite {
        _ = try membership(household: household, account: account, need: .write)
        return try insertNewPot(household: household, d, by: account, createdAt: now, modifiedAt: now, maxPots: maxPots)
    }

    private func insertNewPot(household: String, _ d: PotDraft, by account: String, createdAt: Int64,
                              modifiedAt: Int64, maxPots: Int) throws -> PotWrite {
        if let existing = try pot(household: household, id: d.id) {
            let asked = PotRecord(id: d.id, householdId: household, childId: d.childId, name: d.name, targetCents: d.targetCents,
                                  targetDate: d.targetDate, archived: d.archived, createdAt: createdAt, modifiedAt: modifiedAt,
                                  modifiedBy: account, changeTag: "")
            guard existing.sameContent(as: asked) else { throw LedgerStorageError.potIdTaken(existing) }
            return PotWrite(pot: existing, created: false)
        }
        guard let c = try child(household: household, id: d.childId) else { throw LedgerStorageError.childNotFound }
        // Another child's default pot (no row yet) is that child's.
        if PotRecord.defaultId(child: c.id) != d.id {
            for other in try children(household: household, includeArchived: true)
            where other.id != c.id && PotRecord.defaultId(child: other.id) == d.id {
                throw LedgerStorageError.potIdTaken(PotRecord.defaultPot(of: other))
            }
            if maxPots > 0 {
                let held = try pots(household: household, child: c.id, after: nil, limit: maxPots + 1).items
                if held.filter({ !$0.isDefault }).count >= maxPots { throw LedgerStorageError.tooManyPots(limit: maxPots) }
            }
        }
        let seq = try nextSeq(household: household)
        var p = PotRecord(id: d.id, householdId: household, childId: d.childId, name: d.name, targetCents: d.targetCents,
                          targetDate: d.targetDate, archived: d.archived, createdAt: createdAt, modifiedAt: modifiedAt,
                          modifiedBy: account, changeTag: ChangeTag.of(seq))
        try insertPot(p, seq: seq)
        if p.isDefault { p.balanceCents = try potBalance(household: household, child: p.childId, pot: nil) }
        return PotWrite(pot: p, created: true)
    }

    /// PATCH …/pots/{potId} when `matches` accepts the current tag (a default pot without
    /// a row has the tag `v0`): renames, archives, sets or removes the goal.
    package func updatePot(household: String, account: String, id: String, matches: (String) -> Bool, _ patch: PotPatch,
                           now: Int64) throws -> PotWrite {
        _ = try membership(household: household, account: account, need: .write)
        guard let current = try livePot(household: household, id: id) else { throw LedgerStorageError.potNotFound }
        guard matches(current.changeTag) else {
            throw LedgerStorageError.preconditionFailed(currentTag: current.changeTag, current: current.json)
        }
        var next = current
        if let n = patch.name { next.name = n }
        if let t = patch.targetCents { next.targetCents = t }
        if let d = patch.targetDate { next.targetDate = d }
        if let a = patch.archived { next.archived = a }
        if next.sameContent(as: current) { return PotWrite(pot: current, created: false) }
        return PotWrite(pot: try store(next, replacing: current, by: account, modifiedAt: nil, now: now), created: false)
    }

    /// Writes `next` over `current` (its row, or the default pot's first row) with a new seq.
    private func store(_ next: PotRecord, replacing current: PotRecord, by account: String, modifiedAt: Int64?,
                       now: Int64) throws -> PotRecord {
        let seq = try nextSeq(household: current.householdId)
        var p = next
        p.modifiedAt = modifiedAt ?? LWW.stamp(now: now, newestSeen: current.modifiedAt)
        p.modifiedBy = account
        p.changeTag = ChangeTag.of(seq)
        if try pot(household: current.householdId, id: current.id) == nil {
            try insertPot(p, seq: seq)
        } else {
            try updatePot(p, seq: seq)
        }
        return p
    }

    /// DELETE …/pots/{potId}: only an empty pot that is not the child's default pot. The row
    /// stays as a tombstone (`deleted`, and `archived` for devices that know no deletion).
    package func deletePot(household: String, account: String, id: String, matches: (String) -> Bool,
                           now: Int64) throws {
        _ = try membership(household: household, account: account, need: .write)
        guard let current = try livePot(household: household, id: id) else { throw LedgerStorageError.potNotFound }
        guard matches(current.changeTag) else {
            throw LedgerStorageError.preconditionFailed(currentTag: current.changeTag, current: current.json)
        }
        if current.isDefault { throw LedgerStorageError.defaultPotDeletion }
        if current.balanceCents != 0 { throw LedgerStorageError.potNotEmpty(balanceCents: current.balanceCents) }
        var next = current
        next.deleted = true
        next.archived = true
        _ = try store(next, replacing: current, by: account, modifiedAt: nil, now: now)
    }

    /// POST …/children/{childId}/transfers: moves `amountCents` (> 0) from one pot of the
    /// child to another as two transactions with the transfer's deterministic ids
    /// (`ScheduleIDs.transferOut`/`transferIn`), in this one write: both or neither. A retry
    /// finds both and answers them (`created` false); a different transfer under the same id
    /// is `transactionIdTaken`.
    package func transfer(household: String, account: String, child childId: String, id: UUID, from: String, to: String,
                          amountCents: Int64, note: String, now: Int64) throws -> TransferWrite {
        _ = try membership(household: household, account: account, need: .write)
        guard try child(household: household, id: childId) != nil else { throw LedgerStorageError.childNotFound }
        let defaultId = PotRecord.defaultId(child: childId)
        func potOf(_ pot: String) throws -> String? {
            if pot == defaultId { return nil }
            try checkPot(household: household, pot, child: childId)
            return pot
        }
        let fromPot = try potOf(from), toPot = try potOf(to)
        let out = NewTransaction(id: ScheduleIDs.transferOut(id: id, sha1: .openSSL).lowercased, childId: childId,
                                 amountCents: -amountCents, note: note, source: .manual, createdAt: nil, reversesId: nil,
                                 clientChosenId: false, potId: fromPot)
        let into = NewTransaction(id: ScheduleIDs.transferIn(id: id, sha1: .openSSL).lowercased, childId: childId,
                                  amountCents: amountCents, note: note, source: .manual, createdAt: nil, reversesId: nil,
                                  clientChosenId: false, potId: toPot)
        let a = try addTransaction(household: household, author: account, out, now: now)
        let b = try addTransaction(household: household, author: account, into, now: now)
        return TransferWrite(out: a.transaction, in: b.transaction, created: a.saved || b.saved, balanceCents: b.balanceCents)
    }

    /// A pushed pot: a new id is created as pushed; the same content is unchanged; with the
    /// current base tag (none for a default pot without a row) the edit applies; otherwise a
    /// conflict with the server's record. The caller checked write access and attribution.
    package func pushPot(household: String, _ r: PushBatch.PotItem, maxPots: Int = 0) throws -> PushedPot {
        guard let current = try livePot(household: household, id: r.draft.id) else {
            if let tomb = try pot(household: household, id: r.draft.id) { return .conflict(tomb) }
            let w = try insertNewPot(household: household, r.draft, by: r.modifiedBy, createdAt: r.createdAt,
                                     modifiedAt: r.modifiedAt, maxPots: maxPots)
            return .saved(changeTag: w.pot.changeTag)
        }
        var asked = current
        (asked.name, asked.targetCents, asked.targetDate, asked.archived) =
            (r.draft.name, r.draft.targetCents, r.draft.targetDate, r.draft.archived)
        if asked.sameContent(as: current) && r.draft.childId == current.childId { return .unchanged(changeTag: current.changeTag) }
        let base = r.baseChangeTag ?? (current.changeTag == PotRecord.defaultChangeTag ? PotRecord.defaultChangeTag : nil)
        guard base == current.changeTag, r.draft.childId == current.childId else { return .conflict(current) }
        let p = try store(asked, replacing: current, by: r.modifiedBy, modifiedAt: r.modifiedAt, now: r.modifiedAt)
        return .saved(changeTag: p.changeTag)
    }
}
