import LedgerCore
import LedgerModel

/// The caller's blocks: accounts whose invitations the caller refuses. A block is made by
/// declining an invitation with `{"block": true}` (`InvitationRoutes.decline`); an
/// invitation from a blocked account is then answered as one to an unknown handle, so the
/// inviter cannot tell. Each caller sees and lifts only their own blocks: anyone else's
/// is 404, as is an account the caller has not blocked.
enum BlockRoutes {
    /// The caller's blocks, newest first, paged like every list.
    static func list(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        return try ctx.list("blocks \(c.accountId)", read: { r, before, limit in
            try r.blocks(account: c.accountId, before: before, limit: limit)
        }, item: \.json)
    }

    /// Lifts the caller's block of `accountId`: its invitations are accepted again.
    static func lift(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let blocked = try ctx.id("accountId")
        return ctx.write({ w in try w.unblock(account: c.accountId, blocked: blocked) },
                         answer: { _ in RequestContext.noContent() })
    }
}

extension BlockRecord {
    /// The API form: `{accountId, handle, displayName, createdAt}`.
    var json: JSONValue {
        .object([
            "accountId": .string(accountId), "handle": .string(handle), "displayName": .string(displayName),
            "createdAt": .string(Timestamp.format(ms: createdAt)),
        ])
    }
}
