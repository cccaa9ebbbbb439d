import Foundation
import LedgerModel
import SQLiteKit

extension LedgerStore {
    static let scheduleColumns = """
        id, child_id, kind, amount_cents, rate_basis_points, cadence, first_date, time_zone, end_date, note, paused, \
        split, next_due_date, deleted, created_at, modified_at, modified_by, change_tag, terms_from, last_settled, back_pay
        """

    /// The schedule of row `r`, nil when a stored value is unreadable (written by a newer version).
    static func schedule(from r: SQLiteRow) -> ScheduleRecord? {
        guard let kind = ScheduleKind(rawValue: r.string(2)), let cadence = ScheduleCadence(rawValue: r.string(5)),
              let first = LocalDate(r.string(6)), let from = LocalDate(r.string(18)) else { return nil }
        let split = r.optionalString(11).flatMap { try? JSONDecoder().decode([ScheduleSplit].self, from: Data($0.utf8)) }
        return ScheduleRecord(id: r.string(0), childId: r.string(1), kind: kind, amountCents: r.optionalInt(3),
                              rateBasisPoints: r.optionalInt(4), cadence: cadence, firstDate: first, timeZone: r.string(7),
                              endDate: r.optionalString(8).flatMap(LocalDate.init), note: r.string(9), paused: r.bool(10),
                              split: split, nextDueDate: r.optionalString(12).flatMap(LocalDate.init), deleted: r.bool(13),
                              createdAt: r.int(14), modifiedAt: r.int(15), modifiedBy: r.string(16), changeTag: r.optionalString(17),
                              termsFrom: from, lastSettled: r.optionalString(19).flatMap(LocalDate.init), backPay: r.bool(20))
    }

    /// The schedule with `id` (deleted ones too), or nil.
    func schedule(id: String) throws -> ScheduleRecord? {
        try db.queryOne("SELECT \(Self.scheduleColumns) FROM schedules WHERE id = ?", [.text(id)]).flatMap(Self.schedule)
    }

    /// The schedules of `childId` (every child's when nil), oldest first; deleted ones only when asked.
    func schedules(childId: String? = nil, includeDeleted: Bool = false) throws -> [ScheduleRecord] {
        var conditions: [String] = []
        var params: [SQLiteValue] = []
        if let childId { conditions.append("child_id = ?"); params.append(.text(childId)) }
        if !includeDeleted { conditions.append("deleted = 0") }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return try db.query("SELECT \(Self.scheduleColumns) FROM schedules \(filter) ORDER BY created_at, id", params)
            .compactMap(Self.schedule)
    }

    /// Inserts or replaces a schedule with its payer state.
    func upsert(_ s: ScheduleRecord) throws {
        let split = s.split.map { String(decoding: (try? JSONEncoder().encode($0)) ?? Data("[]".utf8), as: UTF8.self) }
        try db.run("""
            INSERT OR REPLACE INTO schedules (\(Self.scheduleColumns))
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(s.id), .text(s.childId), .text(s.kind.rawValue), .optionalInteger(s.amountCents),
                  .optionalInteger(s.rateBasisPoints), .text(s.cadence.rawValue), .text(s.firstDate.description),
                  .text(s.timeZone), .optionalText(s.endDate?.description), .text(s.note), .bool(s.paused),
                  .optionalText(split), .optionalText(s.nextDueDate?.description), .bool(s.deleted), .integer(s.createdAt),
                  .integer(s.modifiedAt), .text(s.modifiedBy), .optionalText(s.changeTag), .text(s.termsFrom.description),
                  .optionalText(s.lastSettled?.description), .bool(s.backPay)])
    }

    /// Forgets that the queued version of a schedule asked for back pay (the server took it).
    func clearBackPay(scheduleId: String) throws {
        try db.run("UPDATE schedules SET back_pay = 0 WHERE id = ?", [.text(scheduleId)])
    }

    /// Sets only the change tag of a schedule.
    func setChangeTag(scheduleId: String, _ tag: String?) throws {
        try db.run("UPDATE schedules SET change_tag = ? WHERE id = ?", [.optionalText(tag), .text(scheduleId)])
    }

    /// True when transaction `id` or its reversal is held: a payment with that id was made
    /// (here, on another device or by the server) and must not be made again.
    func isPaidOrUndone(_ id: UUID) throws -> Bool {
        try db.queryOne("SELECT 1 FROM transactions WHERE id IN (?, ?) LIMIT 1",
                        [.text(id.lowercased), .text(LedgerIDs.reversalID(of: id).lowercased)]) != nil
    }
}

extension LedgerStore {
    /// The latest due date of `schedule` whose payment (or its reversal) is held, searching
    /// back from today's date in its zone; nil when none is.
    func newestPaymentDate(of schedule: ScheduleRecord, nowMs: Int64) throws -> LocalDate? {
        guard let terms = schedule.terms, let scheduleId = LedgerIDs.parse(schedule.id) else { return nil }
        let dates = terms.recurrence.dueDates(through: terms.timeZone.localDate(atMs: nowMs))
        for date in dates.reversed().prefix(ScheduleState.maxPeriods * 2)
        where try isPaidOrUndone(ScheduleIDs.payment(kind: schedule.kind, scheduleId: scheduleId, date: date)) {
            return date
        }
        return nil
    }
}
