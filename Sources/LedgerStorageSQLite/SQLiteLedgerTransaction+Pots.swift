import LedgerCore
import LedgerModel
import SQLiteKit

/// Pots over SQLite: rows of their own; balances summed from the child's transactions.
extension SQLiteLedgerTransaction {
    static let potColumns = """
        household_id, id, child_id, name, target_cents, target_date, archived, deleted, created_at, modified_at, modified_by, \
        change_tag
        """
    static let changedPotsSQL = [false, true].map { only in
        "SELECT \(potColumns), seq FROM pots WHERE household_id = ? AND seq \(only ? "=" : ">") ? ORDER BY seq LIMIT ?"
    }

    /// `p` with its balance read.
    func withBalance(_ p: PotRecord) throws -> PotRecord {
        var p = p
        p.balanceCents = try potBalance(household: p.householdId, child: p.childId, pot: p.isDefault ? nil : p.id)
        return p
    }

    func pot(household: String, id: String) throws -> PotRecord? {
        try db.queryOne("SELECT \(Self.potColumns) FROM pots WHERE household_id = ? AND id = ?", [.text(household), .text(id)])
            .map { try withBalance(PotRecord(row: $0)) }
    }

    func pots(household: String, child: String, after: TimeAndIdPosition?, limit: Int) throws -> KeyedPage<PotRecord, TimeAndIdPosition> {
        let rows = try db.query("""
            SELECT \(Self.potColumns) FROM pots
            WHERE household_id = ?1 AND child_id = ?2 AND deleted = 0 AND (?3 IS NULL OR (created_at, id) > (?3, ?4))
            ORDER BY created_at, id LIMIT ?5
            """, [.text(household), .text(child), after.map { .integer($0.time) } ?? .null, .text(after?.id ?? ""),
                  .int(limit + 1)])
        let page = KeyedPage(rows: rows, limit: limit, item: { PotRecord(row: $0) }) { _, p in
            TimeAndIdPosition(time: p.createdAt, id: p.id)
        }
        return KeyedPage(items: try page.items.map(withBalance), next: page.next)
    }

    func potBalance(household: String, child: String, pot: String?) throws -> Int64 {
        try db.queryOne("""
            SELECT COALESCE(SUM(t.amount_cents), 0) FROM \(Self.ledgerRows) WHERE h.id = ? AND t.child_id = ? AND t.pot_id IS ?
            """, [.text(household), .text(child), pot.map { .text($0) } ?? .null])?.int(0) ?? 0
    }

    func insertPot(_ p: PotRecord, seq: Int64) throws {
        try db.run("""
            INSERT INTO pots (household_id, id, child_id, name, target_cents, target_date, archived, deleted, created_at,
                              modified_at, modified_by, change_tag, seq)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, Self.potValues(p) + [.integer(seq)])
    }

    func updatePot(_ p: PotRecord, seq: Int64) throws {
        try db.run("""
            UPDATE pots SET child_id = ?3, name = ?4, target_cents = ?5, target_date = ?6, archived = ?7, deleted = ?8,
                            created_at = ?9, modified_at = ?10, modified_by = ?11, change_tag = ?12, seq = ?13
            WHERE household_id = ?1 AND id = ?2
            """, Self.potValues(p) + [.integer(seq)])
    }

    private static func potValues(_ p: PotRecord) -> [SQLiteValue] {
        [.text(p.householdId), .text(p.id), .text(p.childId), .text(p.name), p.targetCents.map { .integer($0) } ?? .null,
         p.targetDate.map { .text($0.description) } ?? .null, .bool(p.archived), .bool(p.deleted), .integer(p.createdAt),
         .integer(p.modifiedAt), .text(p.modifiedBy), .text(p.changeTag)]
    }
}
