import SQLiteKit

/// The access rules of API.md (`LedgerReading.membership`) on a SQLite connection, for the
/// code that still reads SQLite directly.
enum Access {
    static func check(_ db: SQLiteConnection, household: String, account: String, need: Membership.Need) throws -> Membership {
        try SQLiteLedgerTransaction(db).membership(household: household, account: account, need: need)
    }
}
