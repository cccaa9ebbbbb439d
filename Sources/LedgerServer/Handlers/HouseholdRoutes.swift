import Foundation
import HTTPServer
import LedgerModel
import SQLiteKit

/// Households: create (POST or idempotent PUT), list, read, rename, delete.
enum HouseholdRoutes {
    static func register(_ r: inout Router) {
        r.add("POST", "/v1/households", create)
        r.add("GET", "/v1/households", list)
        r.add("GET", "/v1/households/{id}", get)
        r.add("PUT", "/v1/households/{id}", put)
        r.add("PATCH", "/v1/households/{id}", patch)
        r.add("DELETE", "/v1/households/{id}", delete)
    }

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

    static func ownerJSON(_ db: SQLiteConnection, id: String) throws -> (JSONValue, String) {
        try LedgerStore.householdJSON(db, id: id, membership: Membership(householdId: id, role: .owner, permission: .readWrite, ownerAccountId: ""))
    }

    static func create(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let (f, clientId) = try fields(ctx, allowId: true, requireName: true)
        let id = clientId ?? UUID().lowercased
        return ctx.write { db in
            if try db.queryOne("SELECT 1 FROM households WHERE id = ?", [.text(id)]) != nil {
                throw APIError(409, "id_conflict", "A household with id \(id) already exists.")
            }
            try Quotas.checkHouseholds(db, owner: c.accountId, limit: ctx.services.configuration.maxHouseholdsPerAccount)
            try LedgerStore.createHousehold(db, id: id, name: f.name!, currency: f.currency ?? "USD", owner: c.accountId)
            let (json, tag) = try ownerJSON(db, id: id)
            return RequestContext.jsonResponse(201, json, etag: tag, headers: [("Location", "/v1/households/\(id)")])
        }
    }

    static func put(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let id = try ctx.id("id")
        let (f, _) = try fields(ctx, allowId: false, requireName: true)
        return ctx.write { db in
            if let row = try db.queryOne("SELECT owner_account_id FROM households WHERE id = ?", [.text(id)]) {
                guard row.string(0) == c.accountId else {
                    throw APIError(409, "id_conflict", "Household id \(id) belongs to another account.")
                }
                let (json, tag) = try ownerJSON(db, id: id)
                return RequestContext.jsonResponse(200, json, etag: tag)
            }
            try Quotas.checkHouseholds(db, owner: c.accountId, limit: ctx.services.configuration.maxHouseholdsPerAccount)
            try LedgerStore.createHousehold(db, id: id, name: f.name!, currency: f.currency ?? "USD", owner: c.accountId)
            let (json, tag) = try ownerJSON(db, id: id)
            return RequestContext.jsonResponse(201, json, etag: tag, headers: [("Location", "/v1/households/\(id)")])
        }
    }

    static func list(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let limit = try ctx.limit()
        let list = "households \(c.accountId)"
        let after = try ctx.services.cursors.decode(ctx.request.queryValue("cursor"), list: list)
        return try ctx.services.reads.with { db in
            let rows = try db.query("""
                SELECT h.id, h.name, h.currency, h.owner_account_id, h.created_at, h.modified_at, h.change_tag, h.shared,
                       CASE WHEN h.owner_account_id = ?1 THEN 'owner' ELSE 'participant' END,
                       CASE WHEN h.owner_account_id = ?1 THEN 'readWrite' ELSE p.permission END,
                       h.rowid
                FROM households h LEFT JOIN participants p ON p.household_id = h.id AND p.account_id = ?1
                WHERE (h.owner_account_id = ?1 OR p.status = 'accepted') AND h.rowid > ?2
                ORDER BY h.rowid LIMIT ?3
                """, [.text(c.accountId), .integer(after ?? 0), .int(limit + 1)])
            let page = rows.prefix(limit)
            let next = rows.count > limit ? ctx.services.cursors.encode(list: list, [page.last!.int(10)]) : nil
            return ctx.json(200, .object([
                "items": .array(page.map { LedgerStore.householdJSON($0, role: $0.string(8), permission: $0.string(9)) }),
                "nextCursor": next.map { .string($0) } ?? .null,
            ]))
        }
    }

    static func get(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let id = try ctx.id("id")
        return try ctx.services.reads.with { db in
            let m = try Access.check(db, household: id, account: c.accountId, need: .read)
            let (json, tag) = try LedgerStore.householdJSON(db, id: id, membership: m)
            return ctx.json(200, json, etag: tag)
        }
    }

    static func patch(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let id = try ctx.id("id")
        let (f, _) = try fields(ctx, allowId: false, requireName: false)
        let ifMatch = ctx.request.headers["If-Match"]
        return ctx.write(touching: [id]) { db in
            let m = try Access.check(db, household: id, account: c.accountId, need: .write)
            let (current, tag) = try LedgerStore.householdJSON(db, id: id, membership: m)
            try Preconditions.check(ifMatch: ifMatch, currentTag: tag, current: current)
            if f.name == nil && f.currency == nil { return RequestContext.jsonResponse(200, current, etag: tag) }
            let seq = try LedgerStore.nextSeq(db, id)
            try db.run("""
                UPDATE households SET name = COALESCE(?, name), currency = COALESCE(?, currency), modified_at = ?,
                    change_tag = ?, household_seq = ? WHERE id = ?
                """, [.optionalText(f.name), .optionalText(f.currency), .integer(Timestamp.nowMs()), .text(LedgerStore.tag(seq)), .integer(seq), .text(id)])
            let (json, newTag) = try LedgerStore.householdJSON(db, id: id, membership: m)
            return RequestContext.jsonResponse(200, json, etag: newTag)
        }
    }

    static func delete(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let id = try ctx.id("id")
        return ctx.write(touching: [id]) { db in
            _ = try Access.check(db, household: id, account: c.accountId, need: .owner)
            try db.run("DELETE FROM device_sync WHERE household_id = ?", [.text(id)])
            try db.run("DELETE FROM households WHERE id = ?", [.text(id)])
            return RequestContext.noContent()
        }
    }
}
