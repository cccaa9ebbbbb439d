import Foundation
import HTTPServer
import LedgerCore
import LedgerModel

/// Pots and goals (create, list, edit, delete) and transfers between a child's pots.
enum PotRoutes {
    static func answer(_ w: PotWrite, status: Int) -> HTTPResponse {
        var headers: [(String, String)] = []
        if status == 201 { headers.append(("Location", "/v1/households/\(w.pot.householdId)/pots/\(w.pot.id)")) }
        return RequestContext.jsonResponse(status, w.pot.json, etag: w.pot.changeTag, headers: headers)
    }

    static func create(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let childId = try ctx.id("childId")
        var b = try ctx.body()
        b.allowOnly(["id", "name", "targetCents", "targetDate", "archived"])
        let id = b.uuid("id") ?? UUID().lowercased
        let fields = b.potFields(requireName: true)
        let archived = b.bool("archived") ?? false
        try b.check()
        guard let name = fields.name else { throw APIError.validation("name", "is required") }
        let draft = PotDraft(id: id, childId: childId, name: name, targetCents: fields.targetCents ?? nil,
                             targetDate: fields.targetDate ?? nil, archived: archived)
        let services = ctx.services, limit = services.configuration.maxPotsPerChild
        return ctx.write(household: household, { w in
            try w.createPot(household: household, account: c.accountId, draft, maxPots: limit, now: services.now())
        }, answer: { written in answer(written, status: written.created ? 201 : 200) })
    }

    static func list(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let childId = try ctx.id("childId")
        return try ctx.list("pots \(household) \(childId)", read: { r, after, limit in
            try r.listPots(household: household, caller: c, child: childId, after: after, limit: limit)
        }, item: \.json)
    }

    static func patch(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let id = try ctx.id("potId")
        var b = try ctx.body()
        b.allowOnly(["name", "targetCents", "targetDate", "archived"])
        let fields = b.potFields(requireName: false)
        let patch = PotPatch(name: fields.name, targetCents: fields.targetCents, targetDate: fields.targetDate,
                             archived: b.bool("archived"))
        try b.check()
        let matches = Preconditions.matches(ifMatch: ctx.request.headers["If-Match"])
        let services = ctx.services
        return ctx.write(household: household, { w in
            try w.updatePot(household: household, account: c.accountId, id: id, matches: matches, patch, now: services.now())
        }, answer: { written in answer(written, status: 200) })
    }

    static func delete(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let id = try ctx.id("potId")
        let matches = Preconditions.matches(ifMatch: ctx.request.headers["If-Match"])
        let services = ctx.services
        return ctx.write(household: household, { w in
            try w.deletePot(household: household, account: c.accountId, id: id, matches: matches, now: services.now())
        }, answer: { _ in RequestContext.noContent() })
    }

    /// POST …/children/{childId}/transfers `{id, fromPotId, toPotId, amountCents, note?}` →
    /// 201 `{out, in, balanceCents}` (200 with the same two on a retry).
    static func transfer(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let childId = try ctx.id("childId")
        var b = try ctx.body()
        b.allowOnly(["id", "fromPotId", "toPotId", "amountCents", "note"])
        let id = b.uuid("id", required: true)
        let from = b.uuid("fromPotId", required: true), to = b.uuid("toPotId", required: true)
        let amount = b.int("amountCents", required: true)
        if let amount, amount <= 0 || amount > Cents.maxTransactionMagnitude {
            b.fail("amountCents", "must be from 1 to \(Cents.maxTransactionMagnitude)")
        }
        let note = b.string("note") ?? ""
        if case .failure(let e) = Validation.note(note) { b.fail("note", e.message) }
        if let from, let to, from == to { b.fail("toPotId", "must differ from fromPotId") }
        try b.check()
        guard let id, let uuid = UUID(uuidString: id), let from, let to, let amount else { throw APIError.internal() }
        let services = ctx.services
        return ctx.write(household: household, { w in
            try w.transfer(household: household, account: c.accountId, child: childId, id: uuid, from: from, to: to,
                           amountCents: amount, note: note, now: services.now())
        }, answer: { t in
            RequestContext.jsonResponse(t.created ? 201 : 200,
                                        .object(["out": t.out.json, "in": t.in.json, "balanceCents": .int(t.balanceCents)]))
        })
    }
}

extension JSONBody {
    /// A pot's client-written members: `name` (required when `requireName`), `targetCents`
    /// (1 to the largest transaction; null: no target) and `targetDate` (YYYY-MM-DD; null:
    /// none). `.some(nil)`: the member was null.
    mutating func potFields(requireName: Bool) -> (name: String?, targetCents: Int64??, targetDate: LocalDate??) {
        let name = self.name("name", required: requireName)
        var target: Int64?? = nil, date: LocalDate?? = nil
        if let v = object["targetCents"] {
            if v == .null { target = .some(nil) } else if let t = int("targetCents") {
                if t <= 0 || t > Cents.maxTransactionMagnitude {
                    fail("targetCents", "must be from 1 to \(Cents.maxTransactionMagnitude)")
                } else {
                    target = .some(t)
                }
            }
        }
        if let v = object["targetDate"] {
            if v == .null { date = .some(nil) } else if let d = localDate("targetDate", required: false) { date = .some(d) }
        }
        return (name, target, date)
    }
}
