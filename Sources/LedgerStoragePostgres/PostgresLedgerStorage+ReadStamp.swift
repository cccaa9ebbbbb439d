#if Postgres
import LedgerCore
import PostgresKit

extension PostgresLedgerStorage {
    /// The household's stamp for `account`: one prepared statement, outside any
    /// transaction (its own snapshot, one round trip). Whatever committed before it started
    /// is in it: a write acknowledged by any process moves the stamp a kept answer carries.
    package func readStamp(household: String, account: String) throws -> HouseholdReadStamp? {
        try Self.mapped {
            try pool.with { db in
                try db.queryOne(Self.readStampSQL, [.uuid(household), .uuid(account)]).map { HouseholdReadStamp(row: $0, account: account) }
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
}
#endif
