import Foundation
import HTTPServer
import LedgerCore
import LedgerModel

/// Households: create (POST or idempotent PUT), list, read, rename, delete.
enum HouseholdRoutes {
    struct Fields { var name: String?; var currency: String? }

    static func fields(_ ctx: RequestContext, allowId: Bool, requireName: Bool) throws -> (Fields, String?) {
        var b = try ctx.body()
        b.allowOnly(allowId ? ["id", "name", "currency"] : ["name", "currency"])
        let id = allowId ? b.uuid("id") : nil
        let name = b.name("name", required: requireName)
        var currency = b.string("currency")
        if let c = currency {
            switch Validation.currency(c) {
            case .success(let v): currency = v
            case .failure(let e): b.fail("currency", e.message)
            }
        }
        try b.check()
        return (Fields(name: name, currency: currency), id)
    }

    /// The answer to a household create (201, or 200 for a PUT that found the caller's household).
    static func created(_ written: Written<HouseholdRecord>) -> HTTPResponse {
        let h = written.record
        let json = h.json(Membership(householdId: h.id, role: .owner, permission: .readWrite, ownerAccountId: h.ownerAccountId))
        return written.isCreated
            ? RequestContext.jsonResponse(201, json, etag: h.changeTag, headers: [("Location", "/v1/households/\(h.id)")])
            : RequestContext.jsonResponse(200, json, etag: h.changeTag)
    }

    static func create(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let (f, clientId) = try fields(ctx, allowId: true, requireName: true)
        return try write(ctx, c, id: clientId ?? UUID().lowercased, f, ifAbsentOnly: true)
    }

    static func put(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let id = try ctx.id("id")
        let (f, _) = try fields(ctx, allowId: false, requireName: true)
        return try write(ctx, c, id: id, f, ifAbsentOnly: false)
    }

    private static func write(_ ctx: RequestContext, _ c: Caller, id: String, _ f: Fields, ifAbsentOnly: Bool) throws -> Reply {
        let limit = ctx.services.configuration.maxHouseholdsPerAccount
        let (name, currency) = (f.name!, f.currency ?? "USD")
        return ctx.write({ w in
            try w.createHousehold(id: id, name: name, currency: currency, owner: c.accountId, ifAbsentOnly: ifAbsentOnly,
                                  maxHouseholds: limit, now: Timestamp.nowMs())
        }, answer: created)
    }

    static func list(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        return try ctx.list("households \(c.accountId)", read: { r, after, limit in
            try r.households(account: c.accountId, after: after, limit: limit)
        }, item: { l in
            l.household.json(Membership(householdId: l.household.id, role: l.role, permission: l.permission,
                                        ownerAccountId: l.household.ownerAccountId))
        })
    }

    static func get(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let id = try ctx.id("id")
        let (h, m) = try ctx.read { try $0.household(id: id, account: c.accountId, need: .read) }
        return ctx.json(200, h.json(m), etag: h.changeTag)
    }

    static func patch(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let id = try ctx.id("id")
        let (f, _) = try fields(ctx, allowId: false, requireName: false)
        let matches = Preconditions.matches(ifMatch: ctx.request.headers["If-Match"])
        return ctx.write({ w in
            try w.updateHousehold(id: id, account: c.accountId, matches: matches, name: f.name, currency: f.currency,
                                  now: Timestamp.nowMs())
        }, answer: { r in RequestContext.jsonResponse(200, r.0.json(r.1), etag: r.0.changeTag) })
    }

    static func delete(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let id = try ctx.id("id")
        return ctx.write({ w in try w.deleteHousehold(id: id, account: c.accountId) }, answer: { _ in RequestContext.noContent() })
    }
}
