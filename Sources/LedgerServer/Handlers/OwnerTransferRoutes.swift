import LedgerCore
import LedgerModel

/// `POST /v1/households/{id}/owner` `{accountId}`: the owner hands the household to one of
/// its accepted read-write participants. Answers 200 with the household as the previous
/// owner now sees it (`role: participant`, the new `ownerAccountId`).
enum OwnerTransferRoutes {
    static func transfer(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        var b = try ctx.body()
        b.allowOnly(["accountId"])
        let target = b.uuid("accountId", required: true)
        try b.check()
        let account = target!
        return ctx.write({ w in
            try w.transferOwnership(household: household, owner: c.accountId, to: account, now: Timestamp.nowMs())
        }, answer: { h, m in RequestContext.jsonResponse(200, h.json(m), etag: h.changeTag) })
    }
}
