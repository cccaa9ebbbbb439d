import Foundation
import LedgerModel

/// Allowance and interest schedules, and the allowance this device pays when it falls due.
///
/// A payment is the transaction `ScheduleIDs.payment` of the schedule and its local due date,
/// dated at the date's first instant in the schedule's zone: the server and every device write
/// the same row, so uploading it after another payer made it is a no-op. Which dates are due is
/// `ScheduleState`'s rule, kept per schedule in the replica; a date whose payment or reversal is
/// already held is never paid again (an undone allowance stays undone). Interest depends on the
/// balance at the due instant, which only the server knows for sure: devices never pay it.
extension LedgerService {
    /// The terms a new schedule is made with.
    struct ScheduleDraft: Sendable, Equatable {
        var kind: ScheduleKind
        var amountCents: Int64?
        var rateBasisPoints: Int64?
        var cadence: ScheduleCadence
        var firstDate: LocalDate
        var timeZone: String
        var endDate: LocalDate?
        var note: String = ""
    }

    /// What an edit changes; nil members stay as they are.
    struct ScheduleEdit: Sendable, Equatable {
        var amountCents: Int64?
        var rateBasisPoints: Int64?
        var cadence: ScheduleCadence?
        var firstDate: LocalDate?
        var timeZone: String?
        /// `.some(nil)` removes the end date.
        var endDate: LocalDate??
        var note: String?
        var paused: Bool?
        /// Pay, with the new terms, the periods a resume would skip.
        var backPay = false
    }

    /// Adds a schedule to a child; an allowance whose first date is already due pays the due
    /// periods now (at most 366, the latest ones).
    @discardableResult
    func addSchedule(childId: String, _ draft: ScheduleDraft, id: String = UUID().lowercased) throws -> ScheduleRecord {
        try Self.checkAmounts(kind: draft.kind, amount: draft.amountCents, rate: draft.rateBasisPoints)
        let zone = try Self.zone(draft.timeZone)
        let note = try Self.validNote(draft.note)
        return try store.transaction {
            try checkWritable()
            guard try store.child(id: childId) != nil else { throw ClientError.childNotFound(childId) }
            let t = now()
            let terms = ScheduleTerms(firstDate: draft.firstDate, cadence: draft.cadence, timeZone: zone, endDate: draft.endDate)
            let change = ScheduleState.created(terms, atMs: t)
            var schedule = ScheduleRecord(
                id: id, childId: childId, kind: draft.kind, amountCents: draft.kind == .allowance ? draft.amountCents : nil,
                rateBasisPoints: draft.kind == .interest ? draft.rateBasisPoints : nil, cadence: draft.cadence,
                firstDate: draft.firstDate, timeZone: zone.identifier, endDate: draft.endDate, note: note, paused: false,
                split: nil, nextDueDate: nil, deleted: false, createdAt: t, modifiedAt: try stamp(), modifiedBy: try author(),
                changeTag: nil, termsFrom: change.state.termsFrom, lastSettled: change.state.lastSettled)
            try store.upsert(schedule)
            try queue(.schedule, schedule.id)
            let paid = try pay(schedule, dates: change.payWithNewTerms, amount: schedule.amountCents)
            schedule.nextDueDate = change.state.nextPayableDate
            try store.upsert(schedule)
            schedule.catchUp = ScheduleCatchUp(paid: paid, skipped: 0, dropped: change.dropped)
            return schedule
        }
    }

    /// Edits a schedule: what is due is paid with the terms before the edit, the new terms pay
    /// from the next unpaid period (`ScheduleState.edited`).
    @discardableResult
    func editSchedule(id: String, _ edit: ScheduleEdit) throws -> ScheduleRecord {
        let zone = try edit.timeZone.map(Self.zone)
        let note = try edit.note.map(Self.validNote)
        return try store.transaction {
            try checkWritable()
            guard var schedule = try store.schedule(id: id), !schedule.deleted else { throw ClientError.scheduleNotFound(id) }
            let before = schedule
            if let amount = edit.amountCents { schedule.amountCents = amount }
            if let rate = edit.rateBasisPoints { schedule.rateBasisPoints = rate }
            try Self.checkAmounts(kind: schedule.kind, amount: schedule.amountCents, rate: schedule.rateBasisPoints)
            if let cadence = edit.cadence { schedule.cadence = cadence }
            if let first = edit.firstDate { schedule.firstDate = first }
            if let zone { schedule.timeZone = zone.identifier }
            if let end = edit.endDate { schedule.endDate = end }
            if let note { schedule.note = note }
            if let paused = edit.paused { schedule.paused = paused }
            if schedule.syncedContent == before.syncedContent { return schedule }
            guard let state = before.state, let terms = schedule.terms else { throw ClientError.invalid(field: "timeZone", message: "is not known on this device") }
            let change = state.edited(to: terms, atMs: now(), backPay: edit.backPay)
            let paid = try pay(before, dates: change.payWithPreviousTerms, amount: before.amountCents)
                + pay(schedule, dates: change.payWithNewTerms, amount: schedule.amountCents)
            schedule.termsFrom = change.state.termsFrom
            schedule.lastSettled = change.state.lastSettled
            schedule.nextDueDate = change.state.nextPayableDate
            schedule.modifiedAt = try stamp()
            schedule.modifiedBy = try author()
            // Until the push carries it; an earlier queued edit's request stays.
            schedule.backPay = schedule.backPay || edit.backPay
            try store.upsert(schedule)
            try queue(.schedule, schedule.id)
            schedule.catchUp = ScheduleCatchUp(paid: paid, skipped: change.skipped, dropped: change.dropped)
            return schedule
        }
    }

    /// Removes a schedule: what is due now is paid, nothing after; paid periods stay.
    @discardableResult
    func removeSchedule(id: String) throws -> ScheduleRecord {
        try store.transaction {
            try checkWritable()
            guard var schedule = try store.schedule(id: id), !schedule.deleted else { throw ClientError.scheduleNotFound(id) }
            var catchUp = ScheduleCatchUp(paid: 0, skipped: 0, dropped: 0)
            if let state = schedule.state {
                let change = state.deleted(atMs: now())
                catchUp.paid = try pay(schedule, dates: change.payWithPreviousTerms, amount: schedule.amountCents)
                catchUp.dropped = change.dropped
                schedule.lastSettled = change.state.lastSettled
            }
            schedule.deleted = true
            schedule.nextDueDate = nil
            schedule.modifiedAt = try stamp()
            schedule.modifiedBy = try author()
            try store.upsert(schedule)
            try queue(.schedule, schedule.id)
            schedule.catchUp = catchUp
            return schedule
        }
    }

    /// Pays every allowance period due now that no payer has paid (at most 366 per schedule
    /// and call; the rest at the next call). Returns the number of payments written. Pays
    /// nothing while shared edits are frozen.
    @discardableResult
    func payDueAllowances() throws -> Int {
        guard paysAllowance else { return 0 }
        // Most calls find nothing due: they take no write lock on the file.
        let t0 = now()
        guard try store.schedules().contains(where: { $0.kind == .allowance && !($0.state?.plan(atMs: t0).pay.isEmpty ?? true) })
        else { return 0 }
        return try store.transaction {
            let t = now()
            var paid = 0
            for schedule in try store.schedules() where schedule.kind == .allowance {
                // A schedule whose child has not arrived waits for it, its dates unsettled.
                guard let state = schedule.state, try store.hasChild(id: schedule.childId) else { continue }
                let plan = state.plan(atMs: t)
                guard !plan.pay.isEmpty else { continue }
                paid += try pay(schedule, dates: plan.pay, amount: schedule.amountCents)
                var settled = schedule
                settled.lastSettled = state.settled(by: plan).lastSettled
                try store.upsert(settled)
            }
            return paid
        }
    }

    /// Whether this device pays allowance now: not while shared edits are frozen, nor on a
    /// child's device.
    var paysAllowance: Bool { (try? checkWritable()) != nil }

    /// Writes the payments of `schedule` for `dates` with `amount` that are not held yet
    /// (paid or undone). Interest and split schedules are the server's to pay. Returns how
    /// many were written.
    @discardableResult
    private func pay(_ schedule: ScheduleRecord, dates: [LocalDate], amount: Int64?) throws -> Int {
        guard schedule.kind == .allowance, schedule.split == nil, let amount, amount > 0,
              let terms = schedule.terms, let scheduleId = LedgerIDs.parse(schedule.id),
              try store.hasChild(id: schedule.childId) else { return 0 }
        var paid = 0
        for date in dates {
            let id = ScheduleIDs.payment(kind: .allowance, scheduleId: scheduleId, date: date)
            if try store.isPaidOrUndone(id) { continue }
            guard Cents.add(try store.balance(childId: schedule.childId), amount) != nil else { continue }
            _ = try record(childId: schedule.childId, amount: amount, note: schedule.note, source: ScheduleKind.allowance.rawValue,
                           id: id.lowercased, reverses: nil, createdAt: terms.dueInstantMs(date))
            paid += 1
        }
        return paid
    }

    private static func zone(_ name: String) throws -> ScheduleTimeZone {
        // Foundation names UTC "GMT" on some platforms; the tz database's aliases of UTC are UTC.
        let utcAliases: Set<String> = ["GMT", "Etc/UTC", "Etc/GMT", "Etc/Universal", "Etc/Zulu", "Universal", "Zulu", "UCT", "Etc/UCT"]
        let name = utcAliases.contains(name) ? "UTC" : name
        do { return try ScheduleTimeZone(identifier: name) } catch {
            throw ClientError.invalid(field: "timeZone", message: "must be an IANA name such as Europe/Zurich, or UTC, not \"\(name)\"")
        }
    }

    private static func checkAmounts(kind: ScheduleKind, amount: Int64?, rate: Int64?) throws {
        switch kind {
        case .allowance:
            guard let amount, amount > 0, amount <= Cents.maxTransactionMagnitude else {
                throw ClientError.invalid(field: "amount", message: "must be more than zero and at most 1000000000.00")
            }
        case .interest:
            guard let rate, (1...10_000).contains(rate) else {
                throw ClientError.invalid(field: "rate", message: "must be 0.01 % to 100 % (1 to 10000 basis points)")
            }
        }
    }

    static func validNote(_ note: String) throws -> String {
        switch Validation.note(note) {
        case .success(let n): return n
        case .failure(let e): throw ClientError.invalid(field: "note", message: e.message)
        }
    }
}
