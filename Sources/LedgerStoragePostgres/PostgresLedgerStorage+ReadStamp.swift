#if Postgres
import LedgerCore
import PostgresKit

extension PostgresLedgerStorage {
    /// The households' stamps: one prepared statement outside any transaction (its own
    /// snapshot, one round trip) for all of them. Whatever committed before it started is in
    /// it: a write acknowledged by any process moves the stamp a kept answer carries.
    package func readStamps(_ wanted: [(household: String, account: String)]) throws -> [HouseholdReadStamp?] {
        guard !wanted.isEmpty else { return [] }
        return try Self.mapped {
            try pool.with { db in
                if wanted.count == 1 {
                    let (household, account) = wanted[0]
                    return [try db.queryOne(Self.readStampSQL, [.uuid(household), .uuid(account)])
                        .map { HouseholdReadStamp(row: $0, account: account) }]
                }
                var households: [String] = []
                var seen: Set<String> = []
                for w in wanted where seen.insert(w.household).inserted { households.append(w.household) }
                let rows = try db.query(Self.readStampsSQL, [
                    .text(PostgresLedgerTransaction.arrayLiteral(households)),
                    .text(PostgresLedgerTransaction.arrayLiteral(wanted.map(\.household))),
                    .text(PostgresLedgerTransaction.arrayLiteral(wanted.map(\.account))),
                ]).rows
                var found: [String: HouseholdReadStamp] = [:]
                for r in rows {
                    let account = r.id(8)
                    found[r.id(7) + " " + account] = HouseholdReadStamp(row: r, account: account)
                }
                return wanted.map { found[$0.household.lowercased() + " " + $0.account.lowercased()] }
            }
        }
    }

    /// `HouseholdReadStamp(row:)`'s columns: the access record's (as `accessSQL`), then
    /// the household row's number, its change sequence and the database's incarnation.
    static let readStampSQL = """
        SELECT h.owner_account_id, p.status, p.permission, p.accepted_at IS NOT NULL, h.n, h.seq,
               (SELECT incarnation FROM database_incarnation)
        FROM households h LEFT JOIN participants p ON p.household_id = h.id AND p.account_id = $2
        WHERE h.id = $1
        """

    /// `readStampSQL` for several households ($1, each once) and accounts (pairs: $2, $3),
    /// with the household and the account after the stamp's columns.
    static let readStampsSQL = """
        SELECT h.owner_account_id, p.status, p.permission, p.accepted_at IS NOT NULL, h.n, h.seq,
               (SELECT incarnation FROM database_incarnation), h.id, k.account
        FROM households h JOIN unnest($2::text::uuid[], $3::text::uuid[]) AS k(household, account) ON k.household = h.id
        LEFT JOIN participants p ON p.household_id = h.id AND p.account_id = k.account
        WHERE h.id = ANY($1::text::uuid[])
        """
}
#endif
