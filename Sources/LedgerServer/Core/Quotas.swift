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

    /// 409 `too_many_invitations` when the owner `inviter` has `inviterLimit` pending
    /// invitations out (scope `inviter`), or `invitee` has `inviteeLimit` pending
    /// invitations waiting (scope `invitee`: they must accept or decline some first).
    static func checkInvitations(_ db: SQLiteConnection, inviter: String, invitee: String,
                                 inviterLimit: Int, inviteeLimit: Int) throws {
        if inviterLimit > 0 {
            let n = try db.queryOne("""
                SELECT COUNT(*) FROM households h JOIN participants p ON p.household_id = h.id
                WHERE h.owner_account_id = ? AND p.status = 'invited'
                """, [.text(inviter)])?.int(0) ?? 0
            if n >= inviterLimit {
                throw refusal("too_many_invitations", "You have \(n) pending invitations, the most allowed; wait for answers or withdraw some.",
                              limit: inviterLimit, scope: "inviter")
            }
        }
        if inviteeLimit > 0 {
            let n = try db.queryOne("SELECT COUNT(*) FROM participants WHERE account_id = ? AND status = 'invited'",
                                    [.text(invitee)])?.int(0) ?? 0
            if n >= inviteeLimit {
                throw refusal("too_many_invitations", "That parent has the most pending invitations allowed (\(inviteeLimit)) and must answer some first.",
                              limit: inviteeLimit, scope: "invitee")
            }
        }
    }
}
