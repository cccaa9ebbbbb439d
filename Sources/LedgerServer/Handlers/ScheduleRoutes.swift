import Foundation
import HTTPServer
import LedgerCore
import LedgerModel

/// Allowance and interest schedules: create, list, read, edit (pause, resume, back pay),
/// delete. Every write settles what is due at the server's clock in the same transaction;
/// the answer says how many payments it wrote (`catchUp`).
enum ScheduleRoutes {
    /// The schedule with what the write paid: `{…schedule, catchUp: {paid, skipped, dropped}}`.
    static func answer(_ w: ScheduleWrite, status: Int) -> HTTPResponse {
        guard case .object(var o) = w.schedule.json else { return RequestContext.jsonResponse(status, w.schedule.json) }
        o["catchUp"] = w.catchUp.json
        var headers: [(String, String)] = []
        if status == 201 {
            headers.append(("Location", "/v1/households/\(w.schedule.householdId)/schedules/\(w.schedule.id)"))
        }
        return RequestContext.jsonResponse(status, .object(o), etag: w.schedule.changeTag, headers: headers)
    }

    static func create(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let childId = try ctx.id("childId")
        var b = try ctx.body()
        b.allowOnly(["id", "kind", "amountCents", "rateBasisPoints", "cadence", "firstDate", "timeZone", "endDate", "note",
                     "paused", "split"])
        let id = b.uuid("id") ?? UUID().lowercased
        let draft = b.scheduleDraft(id: id, childId: childId)
        try b.check()
        guard let draft else { throw APIError.validation("body", "is not a schedule") }
        let services = ctx.services, limit = services.configuration.maxSchedulesPerChild
        return ctx.write(household: household, { w in
            try w.createSchedule(household: household, account: c.accountId, draft, maxSchedules: limit, now: services.now())
        }, answer: { written in answer(written, status: written.created ? 201 : 200) })
    }

    static func list(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let childId = try ctx.id("childId")
        return try ctx.list("schedules \(household) \(childId)", read: { r, after, limit in
            try r.readAccess(household: household, caller: c, child: childId)
            guard try r.child(household: household, id: childId) != nil else { throw LedgerStorageError.childNotFound }
            return try r.schedules(household: household, child: childId, after: after, limit: limit)
        }, item: \.json)
    }

    static func get(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let id = try ctx.id("scheduleId")
        // Not by stamp: the schedule job settles a schedule that paid nothing (its next due
        // date moves) without advancing the household's change sequence.
        return try ctx.cachedRead(ReadCache.key("schedule", household, id, c.readerKey), household: nil) { r in
            try r.readAccess(household: household, caller: c)
            guard let s = try r.schedule(household: household, id: id), !s.deleted, c.maySee(child: s.childId)
            else { throw LedgerStorageError.scheduleNotFound }
            return RequestContext.jsonResponse(200, s.json, etag: s.changeTag)
        }
    }

    static func patch(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let id = try ctx.id("scheduleId")
        var b = try ctx.body()
        b.allowOnly(["amountCents", "rateBasisPoints", "note", "cadence", "firstDate", "timeZone", "endDate", "paused",
                     "backPay", "split"])
        let patch = b.schedulePatch()
        try b.check()
        let matches = Preconditions.matches(ifMatch: ctx.request.headers["If-Match"])
        let services = ctx.services
        return ctx.write(household: household, { w in
            _ = try w.membership(household: household, account: c.accountId, need: .write)
            let current = try w.liveSchedule(household: household, id: id)
            // Checked against the stored kind: an allowance has no rate, interest no amount.
            if current.kind == .allowance, patch.rateBasisPoints != nil {
                throw APIError.validation("rateBasisPoints", "is for interest only")
            }
            if current.kind == .interest, patch.amountCents != nil {
                throw APIError.validation("amountCents", "is for an allowance only")
            }
            if let end = patch.endDate ?? current.terms.endDate, end < (patch.firstDate ?? current.terms.firstDate) {
                throw APIError.validation("endDate", "must not be before firstDate")
            }
            return try w.updateSchedule(household: household, account: c.accountId, id: id, matches: matches, patch,
                                        now: services.now())
        }, answer: { written in answer(written, status: 200) })
    }

    static func delete(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let id = try ctx.id("scheduleId")
        let matches = Preconditions.matches(ifMatch: ctx.request.headers["If-Match"])
        let services = ctx.services
        return ctx.write(household: household, { w in
            try w.deleteSchedule(household: household, account: c.accountId, id: id, matches: matches, now: services.now())
        }, answer: { _ in RequestContext.noContent() })
    }
}
