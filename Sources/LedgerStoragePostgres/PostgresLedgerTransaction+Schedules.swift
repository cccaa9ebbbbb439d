#if Postgres
import LedgerCore
import LedgerModel
import PostgresKit

/// Schedules over PostgreSQL: the columns the rules query, and the rest as one document.
extension PostgresLedgerTransaction {
    static let scheduleColumns = "household_id, id, child_id, deleted, doc"

    func schedule(household: String, id: String) throws -> ScheduleRecord? {
        sendDeferred()
        try lock(household)
        return try db.queryOne("SELECT \(Self.scheduleColumns) FROM schedules WHERE household_id = $1 AND id = $2",
                               [.uuid(household), .uuid(id)]).flatMap { ScheduleRecord(row: $0) }
    }

    func schedules(household: String, ids: [String]) throws -> [ScheduleRecord] {
        guard !ids.isEmpty else { return [] }
        try lock(household)
        return try db.query("""
            SELECT \(Self.scheduleColumns) FROM schedules WHERE household_id = $1 AND id = ANY($2::uuid[])
            """, [.uuid(household), .uuidArray(ids)]).rows.compactMap { ScheduleRecord(row: $0) }
    }

    func schedules(household: String, child: String, after: TimeAndIdPosition?, limit: Int) throws -> KeyedPage<ScheduleRecord, TimeAndIdPosition> {
        sendDeferred()
        try lock(household)
        let rows = try db.query("""
            SELECT \(Self.scheduleColumns), created_at FROM schedules
            WHERE household_id = $1 AND child_id = $2 AND NOT deleted AND (NOT $3 OR (created_at, id) > ($4, $5))
            ORDER BY created_at, id LIMIT $6
            """, [.uuid(household), .uuid(child), .bool(after != nil), .timestamp(ms: after?.time ?? 0),
                  .uuid(after?.id ?? Self.noId), .int(Int64(limit) + 1)]).rows.filter { ScheduleRecord(row: $0) != nil }
        return KeyedPage(rows: rows, limit: limit, item: { ScheduleRecord(row: $0)! }) { r, s in
            TimeAndIdPosition(time: r.timestampMs(5), id: s.id)
        }
    }

    func scheduleCount(household: String, child: String) throws -> Int {
        sendDeferred()
        try lock(household)
        return Int(try db.queryOne("SELECT count(*) FROM schedules WHERE household_id = $1 AND child_id = $2 AND NOT deleted",
                                   [.uuid(household), .uuid(child)])?.int(0) ?? 0)
    }

    func balance(household: String, child: String, createdBefore beforeMs: Int64) throws -> Int64 {
        sendDeferred()
        try lock(household)
        return try db.queryOne("""
            SELECT COALESCE(SUM(amount_cents), 0)::bigint FROM transactions
            WHERE household_id = $1 AND child_id = $2 AND created_at < $3
            """, [.uuid(household), .uuid(child), .timestamp(ms: beforeMs)])?.int(0) ?? 0
    }

    func dueSchedules(atMs: Int64, limit: Int) throws -> [DueSchedule] {
        try db.query("SELECT household_id, id FROM schedules WHERE due_at <= $1 ORDER BY due_at LIMIT $2",
                     [.timestamp(ms: atMs), .int(Int64(limit))]).rows
            .map { DueSchedule(householdId: $0.uuid(0), id: $0.uuid(1)) }
    }

    func insertSchedule(_ s: ScheduleRecord, seq: Int64) throws {
        sendDeferred()
        try lock(s.householdId)
        try db.query("""
            INSERT INTO schedules (household_id, id, child_id, seq, deleted, due_at, created_at, doc)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            """, [.uuid(s.householdId), .uuid(s.id), .uuid(s.childId), .int(seq), .bool(s.deleted),
                  s.dueAt.map { .timestamp(ms: $0) } ?? .null, .timestamp(ms: s.createdAt), .text(s.document)])
    }

    func updateSchedule(_ s: ScheduleRecord, seq: Int64?) throws {
        try lock(s.householdId)
        holdScheduleUpdate(s, seq: seq)
    }
}
#endif
