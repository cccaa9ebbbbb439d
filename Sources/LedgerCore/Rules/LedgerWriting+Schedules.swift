import Foundation
import LedgerModel

/// A schedule as a client describes it (a POST, or a device's push).
package struct ScheduleDraft: Sendable, Equatable {
    package var id: String
    package var childId: String
    package var kind: ScheduleKind
    package var amountCents: Int64
    package var rateBasisPoints: Int64
    package var note: String
    package var terms: ScheduleTerms
    /// Each payment split across pots (nil: all to the default pot).
    package var split: [SchedulePart]?

    package init(id: String, childId: String, kind: ScheduleKind, amountCents: Int64, rateBasisPoints: Int64, note: String,
                 terms: ScheduleTerms, split: [SchedulePart]? = nil) {
        (self.id, self.childId, self.kind, self.amountCents) = (id, childId, kind, amountCents)
        (self.rateBasisPoints, self.note, self.terms, self.split) = (rateBasisPoints, note, terms, split)
    }

    /// The record it makes in `household`, before any state or stamp of storage's.
    func record(household: String, state: ScheduleState, deleted: Bool = false, at: Int64, by: String,
                changeTag: String = "") -> ScheduleRecord {
        ScheduleRecord(id: id, householdId: household, childId: childId, kind: kind, amountCents: amountCents,
                       rateBasisPoints: rateBasisPoints, note: note, state: state, split: split, deleted: deleted, createdAt: at,
                       modifiedAt: at, modifiedBy: by, changeTag: changeTag)
    }
}

/// What a PATCH changes (nil: unchanged; `endDate` `.some(nil)` removes the end date).
package struct SchedulePatch: Sendable, Equatable {
    package var amountCents: Int64?
    package var rateBasisPoints: Int64?
    package var note: String?
    package var cadence: ScheduleCadence?
    package var firstDate: LocalDate?
    package var timeZone: ScheduleTimeZone?
    package var endDate: LocalDate??
    package var paused: Bool?
    /// A new split (`.some(nil)`: none; nil: unchanged).
    package var split: [SchedulePart]??
    /// Pay what the new terms make due before the edit (the dates a resume would skip).
    package var backPay = false

    package init(amountCents: Int64? = nil, rateBasisPoints: Int64? = nil, note: String? = nil, cadence: ScheduleCadence? = nil,
                 firstDate: LocalDate? = nil, timeZone: ScheduleTimeZone? = nil, endDate: LocalDate?? = nil,
                 paused: Bool? = nil, backPay: Bool = false) {
        (self.amountCents, self.rateBasisPoints, self.note, self.cadence) = (amountCents, rateBasisPoints, note, cadence)
        (self.firstDate, self.timeZone, self.endDate, self.paused, self.backPay) = (firstDate, timeZone, endDate, paused, backPay)
    }
}

/// What became of a pushed schedule.
package enum PushedSchedule: Sendable, Equatable {
    case saved(changeTag: String)
    case unchanged(changeTag: String)
    case conflict(ScheduleRecord)
}

/// The schedule rules (`docs/allowance.md`): every change settles what is due under the
/// terms it replaces, in the same transaction, through `addTransaction` — so a payment is
/// one transaction with its deterministic id whoever writes it first (the server's job, a
/// request, a device's push), and an undone payment (its reversal written) is never paid again.
extension LedgerWriting {
    /// POST …/children/{childId}/schedules: the same id with the same content is the same
    /// schedule (answered as it is); a different one, or a deleted one, is a conflict. A
    /// first date in the past pays the dates already due (at most the latest 366).
    package func createSchedule(household: String, account: String, _ d: ScheduleDraft, maxSchedules: Int = 0,
                                now: Int64) throws -> ScheduleWrite {
        _ = try membership(household: household, account: account, need: .write)
        return try insertNewSchedule(household: household, d, by: account, maxSchedules: maxSchedules, now: now)
    }

    private func insertNewSchedule(household: String, _ d: ScheduleDraft, by account: String, createdAt: Int64? = nil,
                                   modifiedAt: Int64? = nil, maxSchedules: Int, now: Int64) throws -> ScheduleWrite {
        if let existing = try schedule(household: household, id: d.id) {
            let asked = d.record(household: household, state: ScheduleState(terms: d.terms), at: now, by: account)
            guard !existing.deleted, existing.sameContent(as: asked) else { throw LedgerStorageError.scheduleIdTaken(existing) }
            return ScheduleWrite(schedule: existing, created: false)
        }
        guard try child(household: household, id: d.childId) != nil else { throw LedgerStorageError.childNotFound }
        try checkSplit(household: household, d.split, child: d.childId)
        if maxSchedules > 0, try scheduleCount(household: household, child: d.childId) >= maxSchedules {
            throw LedgerStorageError.tooManySchedules(limit: maxSchedules)
        }
        let change = ScheduleState.created(d.terms, atMs: now)
        let seq = try nextSeq(household: household)
        var s = d.record(household: household, state: change.state, at: createdAt ?? now, by: account, changeTag: ChangeTag.of(seq))
        s.modifiedAt = modifiedAt ?? s.createdAt
        try insertSchedule(s, seq: seq)
        let paid = try pay(s, dates: change.payWithNewTerms, now: now)
        return ScheduleWrite(schedule: s, catchUp: ScheduleCatchUp(paid: paid, dropped: change.dropped), created: true)
    }

    /// A readable schedule (not deleted) of a member.
    package func liveSchedule(household: String, id: String) throws -> ScheduleRecord {
        guard let s = try schedule(household: household, id: id), !s.deleted else { throw LedgerStorageError.scheduleNotFound }
        return s
    }

    /// PATCH …/schedules/{id} when `matches` accepts the current tag: what is due is paid
    /// under the previous terms, then the new terms apply from the next unpaid period
    /// (`ScheduleState.edited`).
    package func updateSchedule(household: String, account: String, id: String, matches: (String) -> Bool,
                                _ patch: SchedulePatch, now: Int64) throws -> ScheduleWrite {
        _ = try membership(household: household, account: account, need: .write)
        let current = try liveSchedule(household: household, id: id)
        guard matches(current.changeTag) else {
            throw LedgerStorageError.preconditionFailed(currentTag: current.changeTag, current: current.json)
        }
        var next = current
        if let a = patch.amountCents { next.amountCents = a }
        if let r = patch.rateBasisPoints { next.rateBasisPoints = r }
        if let n = patch.note { next.note = n }
        var terms = current.terms
        if let c = patch.cadence { terms.cadence = c }
        if let f = patch.firstDate { terms.firstDate = f }
        if let z = patch.timeZone { terms.timeZone = z }
        if let e = patch.endDate { terms.endDate = e }
        if let p = patch.paused { terms.paused = p }
        if let sp = patch.split {
            try checkSplit(household: household, sp, child: current.childId)
            next.split = sp
        }
        next.state.terms = terms
        if next.sameContent(as: current) && !patch.backPay { return ScheduleWrite(schedule: current, created: false) }
        return try apply(edit: next, to: current, backPay: patch.backPay, by: account, modifiedAt: nil, now: now)
    }

    /// The edit `next` (the new amounts and terms) of `current`, settled at `now`.
    private func apply(edit next: ScheduleRecord, to current: ScheduleRecord, backPay: Bool, by account: String,
                       modifiedAt: Int64?, now: Int64) throws -> ScheduleWrite {
        let change = current.state.edited(to: next.terms, atMs: now, backPay: backPay)
        var paid = try pay(current, dates: change.payWithPreviousTerms, now: now)
        let seq = try nextSeq(household: current.householdId)
        var s = next
        s.state = change.state
        s.modifiedAt = modifiedAt ?? LWW.stamp(now: now, newestSeen: current.modifiedAt)
        s.modifiedBy = account
        s.changeTag = ChangeTag.of(seq)
        try updateSchedule(s, seq: seq)
        paid += try pay(s, dates: change.payWithNewTerms, now: now)
        return ScheduleWrite(schedule: s, catchUp: ScheduleCatchUp(paid: paid, skipped: change.skipped, dropped: change.dropped),
                             created: false)
    }

    /// DELETE …/schedules/{id}: pays what is due now, nothing after; paid periods stay.
    package func deleteSchedule(household: String, account: String, id: String, matches: (String) -> Bool,
                                now: Int64) throws -> ScheduleWrite {
        _ = try membership(household: household, account: account, need: .write)
        let current = try liveSchedule(household: household, id: id)
        guard matches(current.changeTag) else {
            throw LedgerStorageError.preconditionFailed(currentTag: current.changeTag, current: current.json)
        }
        return try delete(current, by: account, modifiedAt: nil, now: now)
    }

    private func delete(_ current: ScheduleRecord, by account: String, modifiedAt: Int64?, now: Int64) throws -> ScheduleWrite {
        let change = current.state.deleted(atMs: now)
        let paid = try pay(current, dates: change.payWithPreviousTerms, now: now)
        let seq = try nextSeq(household: current.householdId)
        var s = current
        s.state = change.state
        s.deleted = true
        s.modifiedAt = modifiedAt ?? LWW.stamp(now: now, newestSeen: current.modifiedAt)
        s.modifiedBy = account
        s.changeTag = ChangeTag.of(seq)
        try updateSchedule(s, seq: seq)
        return ScheduleWrite(schedule: s, catchUp: ScheduleCatchUp(paid: paid, dropped: change.dropped), created: false)
    }

    /// The job's work on one schedule: pays its dates due at `now` (at most 366; the rest
    /// the next run) and stores the dates settled. The state changes without a new change
    /// tag: a parent's edit made meanwhile does not conflict with the server's payments.
    /// Returns how many payments it wrote.
    package func payDue(household: String, schedule id: String, now: Int64) throws -> Int {
        try payDue(household: household, schedules: [id], now: now)
    }

    /// `payDue` for several schedules of one household in one write: their rows read at
    /// once, and the ids of their payments announced to the backend before any is written
    /// (`expectNewTransactions`), so a backend that pays a round trip per lookup pays one
    /// for all; each schedule is then paid and settled as `payDue` does alone.
    package func payDue(household: String, schedules ids: [String], now: Int64) throws -> Int {
        var due: [(schedule: ScheduleRecord, plan: SchedulePlan, settled: ScheduleState)] = []
        for s in try schedules(household: household, ids: ids) where !s.deleted {
            let plan = s.state.plan(atMs: now)
            let settled = s.state.settled(by: plan)
            if settled != s.state { due.append((s, plan, settled)) }
        }
        guard !due.isEmpty else { return 0 }
        let payments = due.flatMap { d in d.plan.pay.compactMap { Self.paymentId(d.schedule, $0) } }
        if !payments.isEmpty { try expectNewTransactions(household: household, ids: payments) }
        var paid = 0
        for d in due {
            paid += try pay(d.schedule, dates: d.plan.pay, now: now)
            var next = d.schedule
            next.state = d.settled
            try updateSchedule(next, seq: nil)
        }
        return paid
    }

    /// `payDue` for the schedules of several households in one write: every household's
    /// row locked first, in one statement and in id order (`lockHouseholds`), then each
    /// household's schedules paid as `payDue(household:schedules:now:)` pays them. A
    /// household that no longer exists pays nothing. Returns how many payments it wrote.
    package func payDue(households: [(household: String, schedules: [String])], now: Int64) throws -> Int {
        try lockHouseholds(households.map(\.household))
        var paid = 0
        for h in households { paid += try payDue(household: h.household, schedules: h.schedules, now: now) }
        return paid
    }

    /// The id of the payment of `s` for `date` (nil when the schedule's id is no UUID).
    private static func paymentId(_ s: ScheduleRecord, _ date: LocalDate) -> String? {
        LedgerIDs.parse(s.id).map { ScheduleIDs.payment(kind: s.kind, scheduleId: $0, date: date, sha1: .openSSL).lowercased }
    }

    /// A pushed schedule: a new id is created at `now` (paying what is due); the same
    /// content is unchanged; with the current base tag the edit (or deletion) applies at
    /// `now`; otherwise a conflict with the server's record. The caller checked write
    /// access and attribution.
    package func pushSchedule(household: String, _ r: PushBatch.ScheduleItem, maxSchedules: Int = 0,
                              now: Int64) throws -> PushedSchedule {
        guard let current = try schedule(household: household, id: r.draft.id) else {
            if r.deleted {
                // Made and deleted offline: nothing was paid by the server; keep the tombstone.
                guard try child(household: household, id: r.draft.childId) != nil else { throw LedgerStorageError.childNotFound }
                let seq = try nextSeq(household: household)
                let s = r.draft.record(household: household, state: ScheduleState(terms: r.draft.terms), deleted: true,
                                       at: r.createdAt, by: r.modifiedBy, changeTag: ChangeTag.of(seq))
                try insertSchedule(s, seq: seq)
                return .saved(changeTag: s.changeTag)
            }
            let w = try insertNewSchedule(household: household, r.draft, by: r.modifiedBy, createdAt: r.createdAt,
                                          modifiedAt: r.modifiedAt, maxSchedules: maxSchedules, now: now)
            return .saved(changeTag: w.schedule.changeTag)
        }
        var asked = r.draft.record(household: household, state: current.state, deleted: r.deleted, at: current.createdAt,
                                   by: r.modifiedBy)
        asked.state.terms = r.draft.terms
        if asked.sameContent(as: current) && !r.backPay { return .unchanged(changeTag: current.changeTag) }
        guard r.baseChangeTag == current.changeTag, !current.deleted, r.draft.childId == current.childId else {
            return .conflict(current)
        }
        if !r.deleted, asked.split != current.split { try checkSplit(household: household, asked.split, child: current.childId) }
        let written = r.deleted
            ? try delete(current, by: r.modifiedBy, modifiedAt: r.modifiedAt, now: now)
            : try apply(edit: asked, to: current, backPay: r.backPay, by: r.modifiedBy, modifiedAt: r.modifiedAt, now: now)
        return .saved(changeTag: written.schedule.changeTag)
    }

    /// Writes the payments of `s` for `dates` with its kind, amount or rate and note, each
    /// created at its date's due instant. A date whose payment is there already (a device
    /// or another process paid it, with these terms or others) is left as it is, and so is
    /// its reversal: an undone payment stays undone. Interest pays `rateBasisPoints` of the
    /// balance at the due instant (the child's transactions created before it), rounded
    /// down to a cent; nothing when that is 0. Returns how many payments it wrote.
    package func pay(_ s: ScheduleRecord, dates: [LocalDate], now: Int64) throws -> Int {
        guard !dates.isEmpty, let scheduleId = LedgerIDs.parse(s.id) else { return 0 }
        var paid = 0
        for date in dates {
            let due = s.terms.dueInstantMs(date)
            let amount: Int64
            switch s.kind {
            case .allowance:
                amount = s.amountCents
            case .interest:
                let balance = try self.balance(household: s.householdId, child: s.childId, createdBefore: due)
                amount = Cents.interest(balanceCents: balance, rateBasisPoints: Int(s.rateBasisPoints)) ?? 0
            }
            guard amount != 0, Validation.amount(amount).isSuccess else { continue }
            let id = ScheduleIDs.payment(kind: s.kind, scheduleId: scheduleId, date: date, sha1: .openSSL).lowercased
            // Split: one transaction per part that is not zero; the first pot's part keeps the
            // payment's id, each other part `UUIDv5(N, kind:scheduleId:date:potId)`.
            var parts: [(id: String, potId: String?, amountCents: Int64)] = [(id, nil, amount)]
            if let split = s.split, let amounts = SchedulePart.amounts(split, of: amount) {
                parts = amounts.enumerated().map { i, part in
                    (i == 0 ? id : UUIDv5.make(namespace: LedgerIDs.namespace,
                                               name: "\(s.kind.rawValue):\(s.id):\(date):\(part.potId)").lowercased,
                     part.potId, part.amountCents)
                }
            }
            var wrote = false
            for part in parts where part.amountCents != 0 {
                var t = NewTransaction(id: part.id, childId: s.childId, amountCents: part.amountCents, note: s.note,
                                       source: s.kind == .allowance ? .allowance : .interest, createdAt: due, reversesId: nil,
                                       clientChosenId: true, potId: part.potId)
                do {
                    do {
                        if try addTransaction(household: s.householdId, author: s.modifiedBy, t, now: now).saved { wrote = true }
                    } catch LedgerStorageError.unknownPot, LedgerStorageError.potOfAnotherChild {
                        // The pot was deleted since the split named it: that part goes to the default pot.
                        t.potId = nil
                        if try addTransaction(household: s.householdId, author: s.modifiedBy, t, now: now).saved { wrote = true }
                    }
                } catch LedgerStorageError.transactionIdTaken {
                    // Paid already, by a payer that knew other terms: that payment stands.
                } catch LedgerStorageError.balanceOverflow {
                    // A balance at the edge of 64 bits takes no more: this part stays unpaid.
                }
            }
            if wrote { paid += 1 }
        }
        return paid
    }

    /// That every pot of `split` may take this child's payments: its default pot, or a pot of
    /// its own that is not deleted.
    func checkSplit(household: String, _ split: [SchedulePart]?, child: String) throws {
        guard let split else { return }
        let defaultId = PotRecord.defaultId(child: child)
        for part in split where part.potId != defaultId {
            try checkPot(household: household, part.potId, child: child)
        }
    }
}

private extension Result {
    var isSuccess: Bool { if case .success = self { true } else { false } }
}
