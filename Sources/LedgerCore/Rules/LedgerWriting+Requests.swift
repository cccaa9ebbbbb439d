import Foundation
import LedgerModel

/// Children's requests: a child (from their device) or a parent asks; a parent with write
/// access approves (optionally another amount) or declines. An approval writes the payment,
/// a transaction with id `UUIDv5(N, "request:" + requestId)`, in the same database
/// transaction as the decision.
///
/// The decision rule: the first decision the server stores is final. Repeating it (the same
/// approval with the same amount, or a second decline) changes nothing and answers the
/// stored request; any other decision afterwards — approve after decline, decline after
/// approve, approve with another amount — is `requestDecided` with the stored request (409
/// `request_decided`, or `conflict` with `serverRecord` in a sync push). Every replica
/// therefore converges on the server's record, and the payment is written at most once.
extension LedgerWriting {
    /// `POST …/children/{childId}/requests` by a child token of that child or a member with
    /// write access. The same id with the same content again: the stored request
    /// (`.existing`); with other content, `requestIdTaken`.
    package func createRequest(household: String, caller: Caller, child: String, id: String, kind: RequestRecord.Kind,
                               amountCents: Int64, note: String, now: Int64) throws -> Written<RequestRecord> {
        if caller.isChild {
            try readAccess(household: household, caller: caller, child: child)
        } else {
            _ = try membership(household: household, account: caller.accountId, need: .write)
        }
        guard try self.child(household: household, id: child) != nil else { throw LedgerStorageError.childNotFound }
        let createdBy = caller.isChild ? nil : caller.accountId
        if let existing = try request(household: household, id: id) {
            let asked = RequestRecord(id: id, householdId: household, childId: child, kind: kind, requestedCents: amountCents,
                                      note: note, createdBy: createdBy, createdByDevice: caller.tokenId, createdAt: now,
                                      modifiedAt: now, changeTag: "")
            // Another child's request is not shown to a child's device: the id is taken, no more.
            guard caller.maySee(child: existing.childId) else { throw LedgerStorageError.idTaken(id) }
            guard existing.sameRequest(as: asked) else { throw LedgerStorageError.requestIdTaken(existing) }
            return .existing(existing)
        }
        let seq = try nextSeq(household: household)
        let r = RequestRecord(id: id, householdId: household, childId: child, kind: kind, requestedCents: amountCents, note: note,
                              createdBy: createdBy, createdByDevice: caller.tokenId, createdAt: now, modifiedAt: now,
                              changeTag: ChangeTag.of(seq))
        try insertRequest(r, seq: seq)
        return .created(r)
    }

    /// `POST …/requests/{requestId}/approve` (`approve: true`, `amountCents` nil: as asked)
    /// or `…/decline` (`approve: false`, `note`), by a member with write access. See the
    /// decision rule above; `decidedAt` is when the decision was made (a device's clock for
    /// an offline decision pushed later, else `now`).
    package func decideRequest(household: String, account: String, id: String, approve: Bool, amountCents: Int64?,
                               note: String?, decidedAt: Int64? = nil, now: Int64) throws -> RequestDecision {
        _ = try membership(household: household, account: account, need: .write)
        guard var r = try request(household: household, id: id) else { throw LedgerStorageError.requestNotFound }
        switch (r.status, approve) {
        case (.approved, true) where (amountCents ?? r.requestedCents) == r.approvedCents:
            return RequestDecision(request: r, payment: try transaction(household: household, id: r.paymentId), changed: false)
        case (.declined, false):
            return RequestDecision(request: r, payment: nil, changed: false)
        case (.approved, _), (.declined, _):
            throw LedgerStorageError.requestDecided(r)
        case (.pending, _):
            break
        }
        let at = decidedAt ?? now
        var payment: LedgerTransaction?
        if approve {
            let cents = amountCents ?? r.requestedCents
            let new = NewTransaction(id: r.paymentId, childId: r.childId, amountCents: r.paymentCents(cents), note: r.note,
                                     source: .api, createdAt: at, reversesId: nil, clientChosenId: false)
            payment = try addTransaction(household: household, author: account, new, now: now).transaction
            r.approvedCents = cents
            r.status = .approved
        } else {
            r.status = .declined
            r.decisionNote = note
        }
        let seq = try nextSeq(household: household)
        r.decidedBy = account
        r.decidedAt = at
        r.modifiedAt = LWW.stamp(now: now, newestSeen: r.modifiedAt)
        r.changeTag = ChangeTag.of(seq)
        try updateRequest(r, seq: seq)
        return RequestDecision(request: r, payment: payment, changed: true)
    }
}

extension LedgerReading {
    /// `GET …/children/{childId}/requests`: members, or a child token of that child.
    package func requests(household: String, caller: Caller, child: String, before: TimeAndIdPosition?,
                          limit: Int) throws -> KeyedPage<RequestRecord, TimeAndIdPosition> {
        try readAccess(household: household, caller: caller, child: child)
        guard try self.child(household: household, id: child) != nil else { throw LedgerStorageError.childNotFound }
        return try requests(household: household, child: child, before: before, limit: limit)
    }

    /// One request, for a member or a child token of its child (another child's request is
    /// `requestNotFound`, as if there were none).
    package func request(household: String, caller: Caller, id: String) throws -> RequestRecord {
        try readAccess(household: household, caller: caller)
        guard let r = try request(household: household, id: id), caller.maySee(child: r.childId) else {
            throw LedgerStorageError.requestNotFound
        }
        return r
    }
}
