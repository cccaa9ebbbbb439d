import LedgerCore
import LedgerModel

/// Invitations addressed to the caller: list, accept, decline. An invitation id is only
/// usable by its invitee; for anyone else it does not exist (404), so guessed or leaked
/// ids reveal nothing. Superseded ids (the participant was revoked, left, or invited again)
/// are 404 as well.
enum InvitationRoutes {
    /// The caller's pending invitations, newest first, paged like every list.
    static func list(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        return try ctx.list("invitations \(c.accountId)", read: { r, after, limit in
            try r.pendingInvitations(account: c.accountId, after: after, limit: limit)
        }, item: \.json)
    }

    static func accept(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let invitation = try ctx.id("invitationId")
        return ctx.write({ w in try w.acceptInvitation(invitation, account: c.accountId, now: Timestamp.nowMs()) },
                         answer: { accepted in
            let (h, m) = accepted
            return RequestContext.jsonResponse(200, h.json(m), etag: h.changeTag)
        })
    }

    /// Declines; with `{"block": true}` the caller also blocks the household's owner (see
    /// `BlockRoutes`). The body is optional.
    static func decline(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let invitation = try ctx.id("invitationId")
        var b = try ctx.optionalBody()
        b.allowOnly(["block"])
        let block = b.bool("block") ?? false
        try b.check()
        return ctx.write({ w in try w.declineInvitation(invitation, account: c.accountId, block: block, now: Timestamp.nowMs()) },
                         answer: { _ in RequestContext.noContent() })
    }
}

extension Invitation {
    /// The API form: `{id, householdId, householdName, ownerDisplayName, permission, invitedAt}`.
    var json: JSONValue {
        .object([
            "id": .string(id), "householdId": .string(householdId), "householdName": .string(householdName),
            "ownerDisplayName": .string(ownerDisplayName), "permission": .string(permission.rawValue),
            "invitedAt": .string(Timestamp.format(ms: invitedAt)),
        ])
    }
}
