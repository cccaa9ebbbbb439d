import LedgerModel
import SQLiteKit

extension LedgerStore {
    static let potColumns = "id, child_id, name, target_cents, target_date, archived, created_at, modified_at, modified_by, change_tag"

    static func pot(from r: SQLiteRow) -> PotRecord {
        PotRecord(id: r.string(0), childId: r.string(1), name: r.string(2), targetCents: r.optionalInt(3),
                  targetDate: r.optionalString(4).flatMap(LocalDate.init), archived: r.bool(5), createdAt: r.int(6),
                  modifiedAt: r.int(7), modifiedBy: r.string(8), changeTag: r.optionalString(9))
    }

    /// The stored pot with `id`, or nil (a default pot without a row too).
    func pot(id: String) throws -> PotRecord? {
        try db.queryOne("SELECT \(Self.potColumns) FROM pots WHERE id = ?", [.text(id)]).map(Self.pot)
    }

    /// The stored pots of `childId` (every child's when nil), oldest first.
    func pots(childId: String? = nil) throws -> [PotRecord] {
        if let childId {
            return try db.query("SELECT \(Self.potColumns) FROM pots WHERE child_id = ? ORDER BY created_at, id", [.text(childId)]).map(Self.pot)
        }
        return try db.query("SELECT \(Self.potColumns) FROM pots ORDER BY created_at, id").map(Self.pot)
    }

    /// Inserts or replaces a pot.
    func upsert(_ p: PotRecord) throws {
        try db.run("INSERT OR REPLACE INTO pots (\(Self.potColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   [.text(p.id), .text(p.childId), .text(p.name), .optionalInteger(p.targetCents),
                    .optionalText(p.targetDate?.description), .bool(p.archived), .integer(p.createdAt),
                    .integer(p.modifiedAt), .text(p.modifiedBy), .optionalText(p.changeTag)])
    }

    /// Sets only the change tag of a pot.
    func setChangeTag(potId: String, _ tag: String?) throws {
        try db.run("UPDATE pots SET change_tag = ? WHERE id = ?", [.optionalText(tag), .text(potId)])
    }

    /// The balance of the default pot and of each other pot of `childId` that holds
    /// transactions, by pot id; they add up to the child's balance. The default pot's is the
    /// child's cached balance less the others', so this reads only the rows outside the
    /// default pot (`transactions_pot`), however long the child's ledger. `balance`: the
    /// child's cached balance when the caller has read it already.
    func potBalances(childId: String, defaultPot: String, balance known: Int64? = nil) throws -> [String: Int64] {
        var money: [String: Int64] = [:]
        for row in try db.query("""
            SELECT pot_id, SUM(amount_cents) FROM transactions WHERE child_id = ? AND pot_id IS NOT NULL GROUP BY pot_id
            """, [.text(childId)]) {
            money[row.string(0)] = row.int(1)
        }
        return Self.potBalances(defaultPot: defaultPot, balance: try known ?? balance(childId: childId), money: money)
    }

    // MARK: Transfers

    /// Notes a transfer made here, so a push keeps its two transactions together.
    func recordTransfer(id: String, outId: String, inId: String) throws {
        try db.run("INSERT OR IGNORE INTO transfers (id, out_id, in_id) VALUES (?, ?, ?)", [.text(id), .text(outId), .text(inId)])
    }

    /// The other transaction of the transfer `transactionId` belongs to, if it is one made here.
    func transferPartner(of transactionId: String) throws -> String? {
        try db.queryOne("""
            SELECT CASE WHEN out_id = ?1 THEN in_id ELSE out_id END FROM transfers WHERE out_id = ?1 OR in_id = ?1
            """, [.text(transactionId)])?.string(0)
    }
}
