import HTTPServer
import LedgerModel
import SQLiteKit

/// The change feed (with long-poll), batch push and sync status.
enum SyncRoutes {
    static func register(_ r: inout Router) {
        r.add("GET", "/v1/households/{id}/changes", pull)
        r.add("POST", "/v1/households/{id}/changes", push)
        r.add("GET", "/v1/households/{id}/sync-status", status)
    }

    /// Longest `wait`, in seconds.
    static let maxWait = 60

    static func pull(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
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
        let since = ctx.request.queryValue("since").flatMap { $0.isEmpty ? nil : $0 }
        return try ChangePull(ctx: ctx, caller: c, household: household, since: since, limit: limit, wait: wait).start()
    }

    static func push(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let batch = try PushBatch.parse(try ctx.body(), maxRecords: ctx.services.configuration.maxPushRecords)
        ctx.services.writer.submit(WriteQueue.Job.returning({ db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .write)
            let out = try batch.apply(db, household: household, author: c.accountId,
                                      maxChildren: ctx.services.configuration.maxChildrenPerHousehold)
            try DeviceSync.recordPush(db, token: c.tokenId, household: household)
            let response = RequestContext.jsonResponse(200, .object(["results": .array(out.results)]))
            return (response, WriteQueue.WriteEffects(touched: out.changed ? [household] : []))
        }, completion: { result in
            switch result {
            case .success(let response): ctx.respond(response)
            case .failure(let e): ctx.respond(e)
            }
        }))
        return .pending
    }

    static func status(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        return try ctx.services.reads.with { db in
            ctx.json(200, try DeviceSync.status(db, household: household, account: c.accountId))
        }
    }
}
