import Foundation
import LedgerModel
import SQLiteKit

/// Invitations addressed to the caller: list, accept, decline. An invitation id is only
/// usable by its invitee; for anyone else it does not exist (404), so guessed or leaked
/// ids reveal nothing. Superseded ids (the participant was revoked, left, or invited again)
/// are 404 as well.
enum InvitationRoutes {
    static func register(_ r: inout Router) {
        r.add("GET", "/v1/invitations", list)
        r.add("POST", "/v1/invitations/{invitationId}/accept", accept)
        r.add("POST", "/v1/invitations/{invitationId}/decline", decline)
    }

    static let unknown = APIError.notFound("No such invitation.")

    /// The household an invitation of the caller belongs to, so its long-polls wake on the
    /// change (empty when there is none; the write then answers 404).
    static func household(_ ctx: RequestContext, _ invitation: String, _ c: Caller) throws -> Set<String> {
        try ctx.services.reads.with { db in
            try ShareStore.find(db, invitation: invitation, account: c.accountId).map { [$0.householdId] } ?? []
        }
    }

    /// The caller's pending invitations, newest first, paged like every list.
    static func list(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let limit = try ctx.limit()
        let list = "invitations \(c.accountId)"
        // The position is the last answered row's (invited_at, rowid).
        let after = try ctx.services.cursors.decode(ctx.request.queryValue("cursor"), list: list, count: 2)
        return try ctx.services.reads.with { db in
            let rows = try db.query("""
                SELECT p.invitation_id, h.id, h.name, o.display_name, p.permission, p.invited_at, p.rowid
                FROM participants p JOIN households h ON h.id = p.household_id JOIN accounts o ON o.id = h.owner_account_id
                WHERE p.account_id = ?1 AND p.status = 'invited' AND h.shared = 1
                  AND (?2 IS NULL OR p.invited_at < ?2 OR (p.invited_at = ?2 AND p.rowid < ?3))
                ORDER BY p.invited_at DESC, p.rowid DESC LIMIT ?4
                """, [.text(c.accountId), after.map { .integer($0[0]) } ?? .null, .integer(after?[1] ?? 0), .int(limit + 1)])
            let page = rows.prefix(limit)
            let items: [JSONValue] = page.map { r in
                .object([
                    "id": .string(r.string(0)), "householdId": .string(r.string(1)), "householdName": .string(r.string(2)),
                    "ownerDisplayName": .string(r.string(3)), "permission": .string(r.string(4)),
                    "invitedAt": .string(Timestamp.format(ms: r.int(5))),
                ])
            }
            let next = rows.count > limit ? ctx.services.cursors.encode(list: list, [page.last!.int(5), page.last!.int(6)]) : nil
            return ctx.json(200, .object(["items": .array(items), "nextCursor": next.map { .string($0) } ?? .null]))
        }
    }

    static func accept(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let invitation = try ctx.id("invitationId")
        return ctx.write(touching: try household(ctx, invitation, c)) { db in
            guard let p = try ShareStore.find(db, invitation: invitation, account: c.accountId),
                  p.status == .invited || p.status == .accepted else { throw unknown }
            if p.status == .invited {
                try ShareStore.update(db, household: p.householdId, account: c.accountId, status: .accepted)
            }
            let m = try Access.check(db, household: p.householdId, account: c.accountId, need: .read)
            let (json, tag) = try LedgerStore.householdJSON(db, id: p.householdId, membership: m)
            return RequestContext.jsonResponse(200, json, etag: tag)
        }
    }

    static func decline(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let invitation = try ctx.id("invitationId")
        return ctx.write(touching: try household(ctx, invitation, c)) { db in
            guard let p = try ShareStore.find(db, invitation: invitation, account: c.accountId),
                  p.status == .invited || p.status == .declined else { throw unknown }
            if p.status == .invited {
                try ShareStore.update(db, household: p.householdId, account: c.accountId, status: .declined)
            }
            return RequestContext.noContent()
        }
    }
}
