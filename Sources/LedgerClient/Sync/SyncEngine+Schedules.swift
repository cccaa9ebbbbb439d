import LedgerModel

/// Merging pulled (or conflicting) schedules and pots: last writer wins on
/// `(modifiedAt, modifiedBy)` as for children, and a schedule keeps this device's payer state
/// wherever the calendar is unchanged.
extension SyncEngine {
    /// Merges the server's version of a pot. `pending`: the server answered a push of ours
    /// with it (a conflict), so our version is pending whatever the queue says. Returns false
    /// when the record is malformed (the caller sets it aside).
    @discardableResult
    func mergePot(_ wire: Wire.Pot, pending: Bool = false) throws -> Bool {
        guard let server = wire.record() else { return false }
        try store.noteSeen(modifiedAt: server.modifiedAt)
        if let local = try store.pot(id: server.id), try pending || store.pendingVersion(.pot, id: server.id) != nil,
           LWW.wins((local.modifiedAt, local.modifiedBy), over: (server.modifiedAt, server.modifiedBy)) {
            // Our pending edit is newer: keep it and push it on top of this version.
            try store.setChangeTag(potId: server.id, server.changeTag)
            return true
        }
        try store.upsert(server)
        try store.dequeue(.pot, id: server.id)
        return true
    }

    /// Merges the server's version of a schedule (see `mergePot`). The payer state follows the
    /// edit that made that version (`ScheduleState.edited` at its `modifiedAt`, or now if that
    /// is later than this device's clock) and moves past
    /// every date the server paid or skipped (those before its `nextDueDate`); a schedule new
    /// to this device pays from the server's next due date.
    @discardableResult
    func mergeSchedule(_ wire: Wire.Schedule, pending: Bool = false) throws -> Bool {
        guard var server = wire.record() else { return false }
        try store.noteSeen(modifiedAt: server.modifiedAt)
        let local = try store.schedule(id: server.id)
        if let local, try pending || store.pendingVersion(.schedule, id: server.id) != nil,
           LWW.wins((local.modifiedAt, local.modifiedBy), over: (server.modifiedAt, server.modifiedBy)) {
            try store.setChangeTag(scheduleId: server.id, server.changeTag)
            return true
        }
        if let local, let state = local.state, let terms = server.terms {
            // Another device's edit (a pause, a resume, a new calendar) takes effect here as it
            // did there, at its instant: a resume skips the held dates, a new calendar pays from
            // the next unpaid period. What was due before it was paid by that device, with the
            // same ids, and arrives with the feed.
            // (Never later than now: a stamp may run ahead of this device's clock.)
            let next = state.terms == terms ? state : state.edited(to: terms, atMs: min(server.modifiedAt, now())).state
            server.termsFrom = next.termsFrom
            server.lastSettled = next.lastSettled
            if let due = server.nextDueDate, let before = due.adding(days: -1), before >= server.termsFrom {
                // The server paid or skipped every date before its next due date.
                server.lastSettled = max(before, next.lastSettled ?? before)
            }
        }
        try store.upsert(server)
        try store.dequeue(.schedule, id: server.id)
        return true
    }
}
