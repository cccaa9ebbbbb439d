import Foundation
import LedgerModel

extension Ledger {
    // MARK: Schedules

    /// Adds an allowance or interest schedule to a child. An allowance whose first date is
    /// already due pays the periods due (at most the latest 366) at once, on this device.
    /// - Parameters:
    ///   - endDate: the last date that may be paid; nil for none.
    ///   - note: the note of each payment (0…500 characters).
    @discardableResult
    public func addSchedule(_ schedule: NewSchedule, for childId: String, endDate: LocalDate? = nil,
                            note: String = "") async throws -> Schedule {
        let draft: LedgerService.ScheduleDraft
        switch schedule {
        case let .allowance(cents, cadence, first, zone):
            draft = .init(kind: .allowance, amountCents: cents, cadence: cadence, firstDate: first,
                          timeZone: zone.identifier, endDate: endDate, note: note)
        case let .interest(basisPoints, cadence, first, zone):
            draft = .init(kind: .interest, rateBasisPoints: Int64(basisPoints), cadence: cadence, firstDate: first,
                          timeZone: zone.identifier, endDate: endDate, note: note)
        }
        let record = try publicErrors { try service.addSchedule(childId: try existingChild(childId), draft) }
        await didMutate()
        return try publicSchedule(record)
    }

    /// Pauses a schedule: what is due now is paid first, then nothing until it is resumed.
    @discardableResult
    public func pause(_ scheduleId: String) async throws -> Schedule {
        try await editSchedule(scheduleId, LedgerService.ScheduleEdit(paused: true))
    }

    /// Resumes a paused schedule. The periods that fell due while paused are skipped, unless
    /// `backPay` is true: then they are paid now (at most 366).
    @discardableResult
    public func resume(_ scheduleId: String, backPay: Bool = false) async throws -> Schedule {
        try await editSchedule(scheduleId, LedgerService.ScheduleEdit(paused: false, backPay: backPay))
    }

    /// Edits a schedule; nil arguments stay as they are (`endDate: .some(nil)` removes the end
    /// date). What is due is paid with the terms before the edit; the new terms apply from
    /// the next unpaid period. `backPay` (default false) also pays, with the new terms, the
    /// dates a new calendar makes due since the last date paid.
    @discardableResult
    public func editSchedule(_ scheduleId: String, cents: Int64? = nil, rateBasisPoints: Int? = nil,
                             every cadence: ScheduleCadence? = nil, firstDate: LocalDate? = nil, timeZone: TimeZone? = nil,
                             endDate: LocalDate?? = nil, note: String? = nil, backPay: Bool = false) async throws -> Schedule {
        try await editSchedule(scheduleId, LedgerService.ScheduleEdit(
            amountCents: cents, rateBasisPoints: rateBasisPoints.map(Int64.init), cadence: cadence, firstDate: firstDate,
            timeZone: timeZone?.identifier, endDate: endDate, note: note, backPay: backPay))
    }

    /// Removes a schedule: what is due now is paid, nothing later; paid periods stay.
    /// Returns what the removal paid.
    @discardableResult
    public func remove(_ scheduleId: String) async throws -> ScheduleCatchUp {
        let record = try publicErrors { try service.removeSchedule(id: scheduleId.lowercased()) }
        await didMutate()
        return record.catchUp ?? ScheduleCatchUp(paid: 0, skipped: 0, dropped: 0)
    }

    /// The schedules of a child (every child's when nil), oldest first.
    public func schedules(for childId: String? = nil) async throws -> [Schedule] {
        try publicErrors {
            if let childId { try checkChildReadable(childId) }
            return try store.schedules(childId: try childId.map(existingChild)).map(publicSchedule)
        }
    }

    private func editSchedule(_ id: String, _ edit: LedgerService.ScheduleEdit) async throws -> Schedule {
        let record = try publicErrors { try service.editSchedule(id: id.lowercased(), edit) }
        await didMutate()
        return try publicSchedule(record)
    }

    func publicSchedule(_ s: ScheduleRecord) throws -> Schedule {
        Schedule(id: s.id, childId: s.childId, kind: s.kind, amountCents: s.amountCents,
                 rateBasisPoints: s.rateBasisPoints.map { Int($0) }, cadence: s.cadence, firstDate: s.firstDate,
                 timeZone: s.timeZone, endDate: s.endDate, note: s.note, paused: s.paused,
                 nextDueDate: s.deleted ? nil : s.state?.nextPayableDate,
                 isPending: try store.pendingVersion(.schedule, id: s.id) != nil, catchUp: s.catchUp)
    }

    /// Makes `next` (a child's next allowance payment) the earlier of itself and `payment`, or
    /// their sum when both are on the same date.
    static func add(_ payment: NextPayment, to next: inout NextPayment?) {
        guard let current = next, payment.date >= current.date else { next = payment; return }
        if payment.date == current.date { next!.cents = Cents.add(current.cents, payment.cents) ?? current.cents }
    }

    // MARK: Paying

    /// Pays the allowance due now on this device (offline or not); observers hear of it.
    func payDueAllowances() async {
        let paid = (try? service.payDueAllowances()) ?? 0
        if paid > 0 { await didMutate() }
    }

    /// While automatic sync runs: pays each allowance when it falls due, waking at the next due
    /// instant (at least every `allowanceCheckInterval` seconds, so a clock change is noticed).
    func startAllowanceTimer() {
        guard allowanceTimer == nil else { return }
        allowanceTimer = Task { [weak self] in
            while !Task.isCancelled {
                guard let self else { return }
                await self.payDueAllowances()
                let delay = await self.secondsUntilNextDue()
                try? await Task.sleep(nanoseconds: UInt64(delay * 1e9))
            }
        }
    }

    func stopAllowanceTimer() {
        allowanceTimer?.cancel()
        allowanceTimer = nil
    }

    /// Seconds from now (on the ledger's clock) to the earliest due instant of a running
    /// allowance, at most `options.allowanceCheckInterval`.
    private func secondsUntilNextDue() -> Double {
        let now = options.clock()
        var earliest = Int64.max
        for schedule in (try? store.schedules()) ?? [] where schedule.kind == .allowance {
            guard let state = schedule.state, let date = state.nextPayableDate else { continue }
            earliest = min(earliest, state.terms.dueInstantMs(date))
        }
        let seconds = earliest == .max ? options.allowanceCheckInterval : Double(max(0, earliest - now)) / 1000 + 0.01
        return min(seconds, options.allowanceCheckInterval)
    }
}
