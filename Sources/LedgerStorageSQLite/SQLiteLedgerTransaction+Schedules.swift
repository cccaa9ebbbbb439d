import LedgerCore
import LedgerModel
import SQLiteKit

/// Schedules over SQLite: the columns the rules query, and the rest as one document.
extension SQLiteLedgerTransaction {
    static let scheduleColumns = "household_id, id, child_id, deleted, doc"
    static let changedSchedulesSQL = [false, true].map { only in
        "SELECT \(scheduleColumns), seq FROM schedules WHERE household_id = ? AND seq \(only ? "=" : ">") ? ORDER BY seq LIMIT ?"
    }

    func schedule(household: String, id: String) throws -> ScheduleRecord? {
        try db.queryOne("SELECT \(Self.scheduleColumns) FROM schedules WHERE household_id = ? AND id = ?",
                        [.text(household), .text(id)]).flatMap { ScheduleRecord(row: $0) }
    }

    func schedules(household: String, child: String, after: TimeAndIdPosition?, limit: Int) throws -> KeyedPage<ScheduleRecord, TimeAndIdPosition> {
        let rows = try db.query("""
            SELECT \(Self.scheduleColumns), created_at FROM schedules
            WHERE household_id = ?1 AND child_id = ?2 AND deleted = 0 AND (?3 IS NULL OR (created_at, id) > (?3, ?4))
            ORDER BY created_at, id LIMIT ?5
            """, [.text(household), .text(child), after.map { .integer($0.time) } ?? .null, .text(after?.id ?? ""),
                  .int(limit + 1)])
        return KeyedPage(rows: rows.filter { ScheduleRecord(row: $0) != nil }, limit: limit, item: { ScheduleRecord(row: $0)! }) { r, s in
            TimeAndIdPosition(time: r.int(5), id: s.id)
        }
    }

    func scheduleCount(household: String, child: String) throws -> Int {
        Int(try db.queryOne("SELECT COUNT(*) FROM schedules WHERE household_id = ? AND child_id = ? AND deleted = 0",
                            [.text(household), .text(child)])?.int(0) ?? 0)
    }

    func balance(household: String, child: String, createdBefore beforeMs: Int64) throws -> Int64 {
        try db.queryOne("""
            SELECT COALESCE(SUM(t.amount_cents), 0) FROM \(Self.ledgerRows) WHERE h.id = ? AND t.child_id = ? AND t.created_at < ?
            """, [.text(household), .text(child), .integer(beforeMs)])?.int(0) ?? 0
    }

    func dueSchedules(atMs: Int64, limit: Int) throws -> [DueSchedule] {
        try db.query("SELECT household_id, id FROM schedules WHERE due_at <= ? ORDER BY due_at LIMIT ?",
                     [.integer(atMs), .int(limit)]).map { DueSchedule(householdId: $0.string(0), id: $0.string(1)) }
    }

    func insertSchedule(_ s: ScheduleRecord, seq: Int64) throws {
        try db.run("""
            INSERT INTO schedules (household_id, id, child_id, seq, deleted, due_at, created_at, doc)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(s.householdId), .text(s.id), .text(s.childId), .integer(seq), .bool(s.deleted),
                  s.dueAt.map { .integer($0) } ?? .null, .integer(s.createdAt), .text(s.document)])
    }

    func updateSchedule(_ s: ScheduleRecord, seq: Int64?) throws {
        try db.run("""
            UPDATE schedules SET deleted = ?3, due_at = ?4, doc = ?5, seq = COALESCE(?6, seq) WHERE household_id = ?1 AND id = ?2
            """, [.text(s.householdId), .text(s.id), .bool(s.deleted), s.dueAt.map { .integer($0) } ?? .null, .text(s.document),
                  seq.map { .integer($0) } ?? .null])
    }
}
