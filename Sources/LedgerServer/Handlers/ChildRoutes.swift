import Foundation
import LedgerCore
import LedgerModel

/// Children: create, list with balances, read, rename/archive/reorder. Never deleted.
enum ChildRoutes {
    static func create(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        var b = try ctx.body()
        b.allowOnly(["id", "name", "sortOrder"])
        let clientId = b.uuid("id")
        let name = b.name("name", required: true)
        let sortOrder = b.int("sortOrder")
        try b.check()
        let id = clientId ?? UUID().lowercased
        let (childName, maxChildren) = (name!, ctx.services.configuration.maxChildrenPerHousehold)
        return ctx.write(household: household, { w in
            try w.createChild(household: household, account: c.accountId, id: id, name: childName, sortOrder: sortOrder,
                              maxChildren: maxChildren, now: Timestamp.nowMs())
        }, answer: { written in
            let child = written.record
            return written.isCreated
                ? RequestContext.jsonResponse(201, child.json, etag: child.changeTag,
                                              headers: [("Location", "/v1/households/\(household)/children/\(id)")])
                : RequestContext.jsonResponse(200, child.json, etag: child.changeTag)
        })
    }

    static func list(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let includeArchived: Bool
        switch ctx.request.queryValue("includeArchived") {
        case nil, "false"?: includeArchived = false
        case "true"?: includeArchived = true
        default: throw APIError.validation("includeArchived", "must be true or false")
        }
        return try ctx.cachedRead(ReadCache.key("children", household, c.accountId, includeArchived ? "true" : "false"),
                                  household: household) { r in
            _ = try r.membership(household: household, account: c.accountId, need: .read)
            let kids = try r.children(household: household, includeArchived: includeArchived)
            return RequestContext.jsonResponse(200, .object(["items": .array(kids.map(\.json)), "nextCursor": .null]))
        }
    }

    static func get(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let childId = try ctx.id("childId")
        return try ctx.cachedRead(ReadCache.key("child", household, childId, c.readerKey), household: household) { r in
            try r.readAccess(household: household, caller: c, child: childId)
            guard let child = try r.child(household: household, id: childId) else { throw LedgerStorageError.childNotFound }
            return RequestContext.jsonResponse(200, child.json, etag: child.changeTag)
        }
    }

    static func patch(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let childId = try ctx.id("childId")
        var b = try ctx.body()
        b.allowOnly(["name", "sortOrder", "archived"])
        let name = b.name("name")
        let sortOrder = b.int("sortOrder")
        let archived = b.bool("archived")
        try b.check()
        let matches = Preconditions.matches(ifMatch: ctx.request.headers["If-Match"])
        return ctx.write(household: household, { w in
            try w.updateChild(household: household, account: c.accountId, id: childId, matches: matches, name: name,
                              sortOrder: sortOrder, archived: archived, now: Timestamp.nowMs())
        }, answer: { child in RequestContext.jsonResponse(200, child.json, etag: child.changeTag) })
    }
}
