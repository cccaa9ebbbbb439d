#if Postgres
import LedgerCore
import LedgerModel
import PostgresKit

/// Pots over PostgreSQL: rows of their own; balances summed from the child's transactions.
extension PostgresLedgerTransaction {
    static let potColumns = """
        household_id, id, child_id, name, target_cents, target_date, archived, deleted, created_at, modified_at, modified_by, \
        change_tag
        """

    /// `p` with its balance read.
    func withBalance(_ p: PotRecord) throws -> PotRecord {
        var p = p
        p.balanceCents = try potBalance(household: p.householdId, child: p.childId, pot: p.isDefault ? nil : p.id)
        return p
    }

    func pot(household: String, id: String) throws -> PotRecord? {
        sendDeferred()
        try lock(household)
        return try db.queryOne("SELECT \(Self.potColumns) FROM pots WHERE household_id = $1 AND id = $2",
                               [.uuid(household), .uuid(id)]).map { try withBalance(PotRecord(row: $0)) }
    }

    func pots(household: String, child: String, after: TimeAndIdPosition?, limit: Int) throws -> KeyedPage<PotRecord, TimeAndIdPosition> {
        sendDeferred()
        try lock(household)
        let rows = try db.query("""
            SELECT \(Self.potColumns) FROM pots
            WHERE household_id = $1 AND child_id = $2 AND NOT deleted AND (NOT $3 OR (created_at, id) > ($4, $5))
            ORDER BY created_at, id LIMIT $6
            """, [.uuid(household), .uuid(child), .bool(after != nil), .timestamp(ms: after?.time ?? 0),
                  .uuid(after?.id ?? Self.noId), .int(Int64(limit) + 1)]).rows
        let page = KeyedPage(rows: rows, limit: limit, item: { PotRecord(row: $0) }) { _, p in
            TimeAndIdPosition(time: p.createdAt, id: p.id)
        }
        return KeyedPage(items: try page.items.map(withBalance), next: page.next)
    }

    func potBalance(household: String, child: String, pot: String?) throws -> Int64 {
        sendDeferred()
        try lock(household)
        return try db.queryOne("""
            SELECT COALESCE(SUM(amount_cents), 0)::bigint FROM transactions
            WHERE household_id = $1 AND child_id = $2 AND pot_id IS NOT DISTINCT FROM $3
            """, [.uuid(household), .uuid(child), .optionalUUID(pot)])?.int(0) ?? 0
    }

    func insertPot(_ p: PotRecord, seq: Int64) throws {
        sendDeferred()
        try lock(p.householdId)
        try db.query("""
            INSERT INTO pots (household_id, id, child_id, name, target_cents, target_date, archived, deleted, created_at,
                              modified_at, modified_by, change_tag, seq)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
            """, Self.potValues(p) + [.int(seq)])
    }

    func updatePot(_ p: PotRecord, seq: Int64) throws {
        sendDeferred()
        try lock(p.householdId)
        try db.query("""
            UPDATE pots SET child_id = $3, name = $4, target_cents = $5, target_date = $6, archived = $7, deleted = $8,
                            created_at = $9, modified_at = $10, modified_by = $11, change_tag = $12, seq = $13
            WHERE household_id = $1 AND id = $2
            """, Self.potValues(p) + [.int(seq)])
    }

    private static func potValues(_ p: PotRecord) -> [PGValue] {
        [.uuid(p.householdId), .uuid(p.id), .uuid(p.childId), .text(p.name), p.targetCents.map { .int($0) } ?? .null,
         p.targetDate.map { .text($0.description) } ?? .null, .bool(p.archived), .bool(p.deleted), .timestamp(ms: p.createdAt),
         .timestamp(ms: p.modifiedAt), .uuid(p.modifiedBy), .text(p.changeTag)]
    }
}
#endif
