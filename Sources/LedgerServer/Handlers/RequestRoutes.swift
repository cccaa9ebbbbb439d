import Foundation
import LedgerCore
import LedgerModel

/// Children's requests: the child's device (or a parent) asks to spend money or says a
/// chore is done; a parent with write access approves (the approval pays, as the
/// transaction `UUIDv5(N, "request:" + requestId)`) or declines. The first decision is final
/// (see `LedgerWriting+Requests.swift`).
///
/// Decisions where API.md is silent (also in `openapi.yaml`):
/// - The body of a new request is `{id?, kind, amountCents, note?}`; `amountCents` is
///   positive (1 … 100_000_000_000) for both kinds: the kind says which way it pays.
/// - A request's JSON also carries `requestedCents` (what was asked), `decisionNote`,
///   `createdBy` (null when the child's device made it), `createdAt`, `modifiedAt`.
/// - Approve and decline answer 200 `{request, transaction}` (`transaction` null for a
///   decline); repeating the same decision answers the same; another decision after the
///   first is 409 `request_decided` with the stored request in `current`.
/// - A child token makes at most `childRequestsPerHour` requests an hour (429 `rate_limited`
///   with `Retry-After`).
enum RequestRoutes {
    static func list(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let child = try ctx.id("childId")
        return try ctx.list("requests \(household) \(child)", read: { r, before, limit in
            try r.requests(household: household, caller: c, child: child, before: before, limit: limit)
        }, item: \.json)
    }

    static func create(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let child = try ctx.id("childId")
        var b = try ctx.body()
        b.allowOnly(["id", "kind", "amountCents", "note"])
        let id = b.uuid("id") ?? UUID().lowercased
        let kindText = b.string("kind", required: true)
        let kind = kindText.flatMap(RequestRecord.Kind.init(rawValue:))
        if kindText != nil, kind == nil { b.fail("kind", "must be spend or chore") }
        let amount = b.int("amountCents", required: true)
        if let amount, amount <= 0 || amount > 100_000_000_000 { b.fail("amountCents", "must be from 1 to 100000000000") }
        let note = b.string("note") ?? ""
        if case .failure(let e) = Validation.note(note) { b.fail("note", e.message) }
        try b.check()
        guard let kind, let amount else { throw APIError.internal() }
        if c.isChild, let retry = ctx.services.childRequestLimiter.take(c.tokenId) {
            var e = APIError(429, "rate_limited", "This device has made too many requests; ask again later.")
            e.headers.set("Retry-After", String(retry))
            throw e
        }
        let services = ctx.services
        return ctx.write(household: household, { w in
            try w.createRequest(household: household, caller: c, child: child, id: id, kind: kind, amountCents: amount,
                                note: note, now: services.now())
        }, answer: { written in
            let r = written.record
            return RequestContext.jsonResponse(written.isCreated ? 201 : 200, r.json, etag: r.changeTag,
                                               headers: [("Location", "/v1/households/\(household)/children/\(child)/requests")])
        })
    }

    static func approve(_ ctx: RequestContext) throws -> Reply {
        try decide(ctx, approve: true)
    }

    static func decline(_ ctx: RequestContext) throws -> Reply {
        try decide(ctx, approve: false)
    }

    private static func decide(_ ctx: RequestContext, approve: Bool) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let id = try ctx.id("requestId")
        var b = try ctx.optionalBody()
        var amount: Int64?, note: String?
        if approve {
            b.allowOnly(["amountCents"])
            amount = b.int("amountCents")
            if let a = amount, a <= 0 || a > 100_000_000_000 { b.fail("amountCents", "must be from 1 to 100000000000") }
        } else {
            b.allowOnly(["note"])
            note = b.string("note")
            if let n = note, case .failure(let e) = Validation.note(n) { b.fail("note", e.message) }
        }
        try b.check()
        let services = ctx.services
        let (cents, decisionNote) = (amount, note)
        return ctx.write(household: household, { w in
            try w.decideRequest(household: household, account: c.accountId, id: id, approve: approve, amountCents: cents,
                                note: decisionNote, now: services.now())
        }, answer: { decision in
            RequestContext.jsonResponse(200, .object(["request": decision.request.json,
                                                      "transaction": decision.payment?.json ?? .null]),
                                        etag: decision.request.changeTag)
        })
    }
}
