import LedgerModel

/// What became of one pushed record.
package struct PushResult: Sendable {
    package enum Kind: String, Sendable { case child, transaction, schedule, pot, request }

    package enum Outcome: Sendable {
        /// Saved as pushed; a child's new change tag.
        case saved(changeTag: String?)
        /// Already stored as pushed; a child's change tag.
        case unchanged(changeTag: String?)
        /// Another version of the child holds the id: the server's.
        case childConflict(Child)
        /// A different transaction holds the id: the server's.
        case transactionConflict(LedgerTransaction)
        /// Another version of the schedule holds the id: the server's.
        case scheduleConflict(ScheduleRecord)
        /// Another version of the pot holds the id: the server's.
        case potConflict(PotRecord)
        /// The request is stored otherwise (other content, or decided otherwise): the server's.
        case requestConflict(RequestRecord)
        /// Refused by a ledger rule or a quota.
        case refused(LedgerStorageError)
        /// Refused before storage was asked (`validation_failed` with the field errors,
        /// `clock_skew`, `modified_by_mismatch`).
        case invalid(code: String, fields: [String: String])
    }

    package var kind: Kind
    package var id: String
    package var outcome: Outcome
    /// The owner who pushed this record back in its author's name (an owner's restore).
    package var restoredBy: String?

    package init(kind: Kind, id: String, outcome: Outcome) {
        (self.kind, self.id, self.outcome) = (kind, id, outcome)
    }
}

extension LedgerWriting {
    /// `POST …/changes` by `caller`'s device: checks write access, applies the batch's
    /// children first, then its transactions, each through the same rules as the single
    /// writes (`pushChild` within the `maxChildren` cap, `addTransaction`), and records the
    /// push. A record's refusal is its result and leaves the rest of the batch alone.
    package func push(_ batch: PushBatch, household: String, caller: Caller, maxChildren: Int, maxSchedules: Int = 0,
                      maxPots: Int = 0, now: Int64) throws -> [PushResult] {
        let m = try membership(household: household, account: caller.accountId, need: .write)
        // Attribution is the caller's: nobody writes in another member's name, except the
        // owner restoring the household from their device after the server went back in
        // time (`ownerRestore`), for accounts that are or were members; such records are
        // marked as restored by the owner.
        var restorable: [String: Bool] = [:]
        func mayRestore(for author: String) throws -> Bool {
            guard batch.ownerRestore, m.role == .owner else { return false }
            if let known = restorable[author] { return known }
            let access = try accessRecord(household: household, account: author)
            let ok = access?.ownerAccountId == author || access?.everAccepted == true
            restorable[author] = ok
            return ok
        }
        var results: [PushResult] = []
        results.reserveCapacity(batch.count)
        for item in batch.children {
            switch item {
            case .invalid(let id, let code, let fields):
                results.append(PushResult(kind: .child, id: id, outcome: .invalid(code: code, fields: fields)))
            case .valid(let record):
                let restoring = record.modifiedBy != caller.accountId
                if restoring, try !mayRestore(for: record.modifiedBy) {
                    results.append(PushResult(kind: .child, id: record.id, outcome: .invalid(code: "modified_by_mismatch", fields: [:])))
                    continue
                }
                let outcome: PushResult.Outcome
                do {
                    switch try pushChild(household: household, record, maxChildren: maxChildren) {
                    case .saved(let tag): outcome = .saved(changeTag: tag)
                    case .unchanged(let tag): outcome = .unchanged(changeTag: tag)
                    case .conflict(let current): outcome = .childConflict(current)
                    }
                } catch let e as LedgerStorageError where e == .tooManyChildren(limit: maxChildren) {
                    outcome = .refused(e)
                }
                var result = PushResult(kind: .child, id: record.id, outcome: outcome)
                if restoring, outcome.isSaved {
                    try markRestored(household: household, kind: "child", id: record.id, by: caller.accountId, at: now)
                    result.restoredBy = caller.accountId
                }
                results.append(result)
            }
        }
        // Pots after children and before schedules and transactions, which may name them.
        for item in batch.pots {
            switch item {
            case .invalid(let id, let code, let fields):
                results.append(PushResult(kind: .pot, id: id, outcome: .invalid(code: code, fields: fields)))
            case .valid(let record):
                // Another member's pot only in the owner's restore, as for children.
                let restoring = record.modifiedBy != caller.accountId
                if restoring, try !mayRestore(for: record.modifiedBy) {
                    results.append(PushResult(kind: .pot, id: record.draft.id, outcome: .invalid(code: "modified_by_mismatch", fields: [:])))
                    continue
                }
                let outcome: PushResult.Outcome
                do {
                    switch try pushPot(household: household, record, maxPots: maxPots) {
                    case .saved(let tag): outcome = .saved(changeTag: tag)
                    case .unchanged(let tag): outcome = .unchanged(changeTag: tag)
                    case .conflict(let current): outcome = .potConflict(current)
                    }
                } catch LedgerStorageError.potIdTaken(let existing) {
                    outcome = .potConflict(existing)
                } catch let e as LedgerStorageError where e == .childNotFound || e == .tooManyPots(limit: maxPots) {
                    outcome = .refused(e)
                }
                var result = PushResult(kind: .pot, id: record.draft.id, outcome: outcome)
                if restoring, outcome.isSaved {
                    try markRestored(household: household, kind: "pot", id: record.draft.id, by: caller.accountId, at: now)
                    result.restoredBy = caller.accountId
                }
                results.append(result)
            }
        }
        // Requests before transactions: an approval writes its payment, so the payment a
        // device wrote offline with its approval comes back unchanged.
        for item in batch.requests {
            switch item {
            case .invalid(let id, let code, let fields):
                results.append(PushResult(kind: .request, id: id, outcome: .invalid(code: code, fields: fields)))
            case .valid(let r) where r.status != .pending && r.decidedBy != caller.accountId:
                results.append(PushResult(kind: .request, id: r.id, outcome: .invalid(code: "modified_by_mismatch", fields: [:])))
            case .valid(let r):
                results.append(PushResult(kind: .request, id: r.id, outcome: try pushRequest(household: household, r,
                                                                                             caller: caller, now: now)))
            }
        }
        // Schedules before transactions: a new schedule pays what is due, so the payments a
        // device made offline and pushes with it come back unchanged.
        for item in batch.schedules {
            switch item {
            case .invalid(let id, let code, let fields):
                results.append(PushResult(kind: .schedule, id: id, outcome: .invalid(code: code, fields: fields)))
            case .valid(let record) where record.modifiedBy != caller.accountId:
                results.append(PushResult(kind: .schedule, id: record.draft.id,
                                          outcome: .invalid(code: "modified_by_mismatch", fields: [:])))
            case .valid(let record):
                let outcome: PushResult.Outcome
                do {
                    switch try pushSchedule(household: household, record, maxSchedules: maxSchedules, now: now) {
                    case .saved(let tag): outcome = .saved(changeTag: tag)
                    case .unchanged(let tag): outcome = .unchanged(changeTag: tag)
                    case .conflict(let current): outcome = .scheduleConflict(current)
                    }
                } catch LedgerStorageError.scheduleIdTaken(let existing) {
                    outcome = .scheduleConflict(existing)
                } catch let e as LedgerStorageError where e == .childNotFound || e == .tooManySchedules(limit: maxSchedules) {
                    outcome = .refused(e)
                } catch let e as LedgerStorageError {
                    switch e {
                    case .unknownPot, .potOfAnotherChild: outcome = .refused(e)
                    default: throw e
                    }
                }
                results.append(PushResult(kind: .schedule, id: record.draft.id, outcome: outcome))
            }
        }
        // The transactions' ids announced before any is looked up (`expectNewTransactions`), as
        // the schedule job does: a backend that pays a round trip per lookup pays one for the
        // batch's new ids, and looks up only those it holds.
        let ids = batch.transactions.compactMap { item -> String? in
            if case .valid(let record) = item { record.id } else { nil }
        }
        if ids.count > 1 { try expectNewTransactions(household: household, ids: ids) }
        for item in batch.transactions {
            switch item {
            case .invalid(let id, let code, let fields):
                results.append(PushResult(kind: .transaction, id: id, outcome: .invalid(code: code, fields: fields)))
            case .valid(let record):
                let author = batch.authors[record.id] ?? caller.accountId
                let restoring = author != caller.accountId
                if restoring, try !mayRestore(for: author) {
                    results.append(PushResult(kind: .transaction, id: record.id, outcome: .invalid(code: "attribution_mismatch", fields: [:])))
                    continue
                }
                let outcome: PushResult.Outcome
                do {
                    let written = try addTransaction(household: household, author: author, record, now: now)
                    outcome = written.saved ? .saved(changeTag: nil) : .unchanged(changeTag: nil)
                } catch LedgerStorageError.transactionIdTaken(let existing) {
                    outcome = .transactionConflict(existing)
                } catch let e as LedgerStorageError {
                    outcome = .refused(e)
                }
                var result = PushResult(kind: .transaction, id: record.id, outcome: outcome)
                if restoring, outcome.isSaved {
                    try markRestored(household: household, kind: "transaction", id: record.id, by: caller.accountId, at: now)
                    result.restoredBy = caller.accountId
                }
                results.append(result)
            }
        }
        try recordPush(token: caller.tokenId, household: household, at: now)
        return results
    }
}

extension LedgerWriting {
    /// A pushed request: new → made (and decided, when it comes decided); known with the
    /// same content → its decision applied when the server's is still pending, unchanged
    /// when the server holds the same one; any other state → conflict with the server's
    /// record (the first decision stored is final: docs/children.md).
    func pushRequest(household: String, _ r: PushBatch.RequestItem, caller: Caller, now: Int64) throws -> PushResult.Outcome {
        do {
            let existing = try request(household: household, id: r.id)
            if existing == nil {
                _ = try createRequest(household: household, caller: caller, child: r.childId, id: r.id, kind: r.kind,
                                      amountCents: r.requestedCents, note: r.note, now: now)
            } else if let existing, !(existing.childId == r.childId && existing.kind == r.kind
                                       && existing.requestedCents == r.requestedCents && existing.note == r.note) {
                return .requestConflict(existing)
            }
            if r.status == .pending {
                guard let current = try request(household: household, id: r.id) else { throw LedgerStorageError.requestNotFound }
                if current.status != .pending { return .requestConflict(current) }
                return existing == nil ? .saved(changeTag: current.changeTag) : .unchanged(changeTag: current.changeTag)
            }
            let d = try decideRequest(household: household, account: caller.accountId, id: r.id, approve: r.status == .approved,
                                      amountCents: r.approvedCents, note: r.decisionNote, decidedAt: r.decidedAt, now: now)
            return d.changed || existing == nil ? .saved(changeTag: d.request.changeTag) : .unchanged(changeTag: d.request.changeTag)
        } catch LedgerStorageError.requestDecided(let current) {
            return .requestConflict(current)
        } catch LedgerStorageError.requestIdTaken(let existing) {
            return .requestConflict(existing)
        } catch let e as LedgerStorageError where e == .childNotFound || e == .balanceOverflow {
            return .refused(e)
        }
    }
}

extension PushResult.Outcome {
    package var isSaved: Bool { if case .saved = self { true } else { false } }
}
