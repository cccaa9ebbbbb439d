import Foundation
import LedgerModel
import SQLiteKit

/// Children: create, list with balances, read, rename/archive/reorder. Never deleted.
enum ChildRoutes {
    static func register(_ r: inout Router) {
        r.add("POST", "/v1/households/{id}/children", create)
        r.add("GET", "/v1/households/{id}/children", list)
        r.add("GET", "/v1/households/{id}/children/{childId}", get)
        r.add("PATCH", "/v1/households/{id}/children/{childId}", patch)
    }

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
        return ctx.write(touching: [household]) { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .write)
            if let existing = try LedgerStore.findChild(db, household: household, id: id) {
                if existing.name == name!, sortOrder == nil || sortOrder == existing.sortOrder {
                    return RequestContext.jsonResponse(200, existing.json, etag: existing.changeTag)
                }
                throw APIError(409, "id_conflict", "A different child with id \(id) already exists in this household.")
            }
            let maxChildren = ctx.services.configuration.maxChildrenPerHousehold
            if let full = try Quotas.childrenFull(db, household: household, limit: maxChildren) { throw full }
            // After the largest sort order (computed here: SQLite would turn Int64.max + 1 into a real).
            let order = try sortOrder ?? (db.queryOne("SELECT MAX(sort_order) FROM children WHERE household_id = ?", [.text(household)])?
                .optionalInt(0).map { $0 == Int64.max ? $0 : $0 + 1 } ?? 0)
            let seq = try LedgerStore.nextSeq(db, household)
            let now = Timestamp.nowMs()
            try db.run("""
                INSERT INTO children (id, household_id, name, sort_order, archived, created_at, modified_at, modified_by, change_tag, balance_cents, seq)
                VALUES (?, ?, ?, ?, 0, ?, ?, ?, ?, 0, ?)
                """, [.text(id), .text(household), .text(name!), .integer(order), .integer(now), .integer(now),
                      .text(c.accountId), .text(LedgerStore.tag(seq)), .integer(seq)])
            let child = try LedgerStore.findChild(db, household: household, id: id)!
            return RequestContext.jsonResponse(201, child.json, etag: child.changeTag,
                                               headers: [("Location", "/v1/households/\(household)/children/\(id)")])
        }
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
        return try ctx.cachedRead("children \(household) \(c.accountId) \(includeArchived)") { r in
            _ = try r.membership(household: household, account: c.accountId, need: .read)
            let kids = try r.children(household: household, includeArchived: includeArchived)
            return RequestContext.jsonResponse(200, .object(["items": .array(kids.map(\.json)), "nextCursor": .null]))
        }
    }

    static func get(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let childId = try ctx.id("childId")
        return try ctx.cachedRead("child \(household) \(childId) \(c.accountId)") { r in
            _ = try r.membership(household: household, account: c.accountId, need: .read)
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
        let ifMatch = ctx.request.headers["If-Match"]
        return ctx.write(touching: [household]) { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .write)
            guard let child = try LedgerStore.findChild(db, household: household, id: childId) else {
                throw APIError.notFound("No such child.")
            }
            try Preconditions.check(ifMatch: ifMatch, currentTag: child.changeTag, current: child.json)
            let newName = name ?? child.name, newOrder = sortOrder ?? child.sortOrder, newArchived = archived ?? child.archived
            if newName == child.name && newOrder == child.sortOrder && newArchived == child.archived {
                return RequestContext.jsonResponse(200, child.json, etag: child.changeTag)
            }
            let seq = try LedgerStore.nextSeq(db, household)
            try db.run("UPDATE children SET name = ?, sort_order = ?, archived = ?, modified_at = ?, modified_by = ?, change_tag = ?, seq = ? WHERE household_id = ? AND id = ?",
                       [.text(newName), .integer(newOrder), .bool(newArchived),
                        .integer(LWW.stamp(now: Timestamp.nowMs(), newestSeen: child.modifiedAt)), .text(c.accountId),
                        .text(LedgerStore.tag(seq)), .integer(seq), .text(household), .text(childId)])
            let updated = try LedgerStore.findChild(db, household: household, id: childId)!
            return RequestContext.jsonResponse(200, updated.json, etag: updated.changeTag)
        }
    }
}
