import SQLiteKit

/// The caps on what one account or household may hold. Each refusal is 409 with its own
/// `code` and the cap in `limit`; a cap of 0 means none. They are checked on the writer,
/// inside the transaction that would add the row, so concurrent requests cannot overshoot.
enum Quotas {
    static func refusal(_ code: String, _ detail: String, limit: Int, scope: String? = nil) -> APIError {
        var e = APIError(409, code, detail)
        e.extra["limit"] = .int(Int64(limit))
        if let scope { e.extra["scope"] = .string(scope) }
        return e
    }

    /// The `too_many_children` refusal when `household` already holds `limit` children
    /// (archived ones count: children are never deleted), else nil.
    static func childrenFull(_ db: SQLiteConnection, household: String, limit: Int) throws -> APIError? {
        guard limit > 0, try SQLiteLedgerTransaction(db).childCount(household: household) >= limit else { return nil }
        return LedgerStorageError.tooManyChildren(limit: limit).apiError
    }
}
