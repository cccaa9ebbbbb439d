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

    /// 409 `too_many_households` when `owner` already owns `limit` households.
    static func checkHouseholds(_ db: SQLiteConnection, owner: String, limit: Int) throws {
        guard limit > 0 else { return }
        let n = try db.queryOne("SELECT COUNT(*) FROM households WHERE owner_account_id = ?", [.text(owner)])?.int(0) ?? 0
        if n >= limit {
            throw refusal("too_many_households", "An account may own at most \(limit) households; delete one first.", limit: limit)
        }
    }

    /// The `too_many_children` refusal when `household` already holds `limit` children
    /// (archived ones count: children are never deleted), else nil.
    static func childrenFull(_ db: SQLiteConnection, household: String, limit: Int) throws -> APIError? {
        guard limit > 0 else { return nil }
        let n = try db.queryOne("SELECT COUNT(*) FROM children WHERE household_id = ?", [.text(household)])?.int(0) ?? 0
        guard n >= limit else { return nil }
        return refusal("too_many_children", "A household may hold at most \(limit) children, archived ones included.", limit: limit)
    }
}
