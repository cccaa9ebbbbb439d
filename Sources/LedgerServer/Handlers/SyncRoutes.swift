import HTTPServer
import LedgerCore
import LedgerModel

/// The change feed (with long-poll), batch push and sync status.
enum SyncRoutes {
    /// Longest `wait`, in seconds.
    static let maxWait = 60

    static func pull(_ ctx: RequestContext) throws -> Reply {
        try pull(ctx, child: false)
    }

    /// `GET /v1/households/{id}/children/{childId}/changes`: the child's feed (a child
    /// token of that child, or a member): the same protocol, that child's records only, and
    /// positions of its own (`SyncPosition.child`).
    static func childPull(_ ctx: RequestContext) throws -> Reply {
        try pull(ctx, child: true)
    }

    private static func pull(_ ctx: RequestContext, child childFeed: Bool) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let child = childFeed ? try ctx.id("childId") : nil
        var fields: [String: String] = [:]
        var limit = ChangeFeed.defaultLimit
        if let raw = ctx.request.queryValue("limit") {
            if let v = Int(raw), (1...ChangeFeed.maxLimit).contains(v) { limit = v } else {
                fields["limit"] = "must be an integer from 1 to \(ChangeFeed.maxLimit)"
            }
        }
        var wait = 0
        if let raw = ctx.request.queryValue("wait") {
            if let v = Int(raw), (0...maxWait).contains(v) { wait = v } else {
                fields["wait"] = "must be an integer from 0 to \(maxWait) (seconds)"
            }
        }
        if !fields.isEmpty { throw APIError.validation(fields) }
        let since = SyncPosition.since(ctx.request.queryValue("since").flatMap { $0.isEmpty ? nil : $0 })
        return try ChangePull(ctx: ctx, caller: c, household: household, child: child, since: since, limit: limit,
                              wait: wait).start()
    }

    static func push(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let services = ctx.services
        let batch = try PushBatch.parse(try ctx.body(), maxRecords: services.configuration.maxPushRecords, now: services.now())
        let maxChildren = services.configuration.maxChildrenPerHousehold
        let maxSchedules = services.configuration.maxSchedulesPerChild, maxPots = services.configuration.maxPotsPerChild
        return ctx.write(household: household, { w in
            try w.push(batch, household: household, caller: c, maxChildren: maxChildren, maxSchedules: maxSchedules,
                       maxPots: maxPots, now: services.now())
        }, answer: { results in
            RequestContext.jsonResponse(200, body: PushResult.answerBody(results))
        })
    }

    /// The household's sync status with one page of its devices (`limit`, default 100,
    /// and `cursor`; `nextCursor` beside `devices`).
    static func status(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let limit = try ctx.limit()
        let list = "sync-status \(household)"
        let after: DevicePosition? = try ctx.services.cursors.position(ctx.request.queryValue("cursor"), list: list)
        let report = try ctx.read { r in try r.syncStatus(household: household, account: c.accountId, after: after, limit: limit) }
        let next = report.next.map { ctx.services.cursors.encode(list: list, $0) }
        return ctx.json(200, report.json(household: household, nextCursor: next))
    }
}
