import Foundation
import LedgerCore
import LedgerModel

/// Accounts and device tokens.
enum AccountRoutes {
    /// `{account, token}` of a new account; shared by the API and the admin command.
    static func createdJSON(_ account: AccountRecord, _ token: IssuedToken) -> JSONValue {
        .object(["account": account.json, "token": token.json])
    }

    /// Throws 403 `registration_closed` when the server takes no new accounts, or 429
    /// `registration_rate_limited` with `Retry-After` when the caller's address is past its
    /// registrations; otherwise this attempt is counted.
    static func admitRegistration(_ ctx: RequestContext) throws {
        if ctx.services.configuration.registration == .closed {
            throw APIError(403, "registration_closed", "This server does not accept new accounts; ask its administrator.")
        }
        if let retry = ctx.services.registrationLimiter.take(ctx.clientAddress) {
            var e = APIError(429, "registration_rate_limited",
                             "Too many accounts were registered from this address; retry in \(retry) s.")
            e.headers.set("Retry-After", String(retry))
            throw e
        }
    }

    /// Every attempt counts toward the address's registrations, a refused body too: a body
    /// is read only once the address is within its limit.
    static func create(_ ctx: RequestContext) throws -> Reply {
        try admitRegistration(ctx)
        var b = try ctx.body()
        b.allowOnly(["handle", "displayName", "deviceName"])
        let handle = b.string("handle", required: true)
        if let h = handle, case .failure(let e) = Validation.handle(h) { b.fail("handle", e.message) }
        let name = b.name("displayName", required: true)
        let device = b.has("deviceName") ? b.name("deviceName") : "default"
        try b.check()
        let (h, n, d) = (handle!, name!, device ?? "default")
        return ctx.write({ w in try w.createAccount(handle: h, displayName: n, deviceName: d, now: Timestamp.nowMs()) },
                         answer: { created in RequestContext.jsonResponse(201, createdJSON(created.0, created.1)) })
    }

    static func me(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        return .response(try ctx.read { r in
            guard let a = try r.account(id: c.accountId), let t = try r.token(id: c.tokenId) else {
                throw LedgerStorageError.callerUnknown
            }
            return RequestContext.jsonResponse(200, .object(["account": a.json, "token": t.json()]))
        })
    }

    static func createToken(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        var b = try ctx.body()
        b.allowOnly(["deviceName"])
        let name = b.name("deviceName", required: true)
        try b.check()
        let device = name!
        let maxTokens = ctx.services.configuration.maxTokensPerAccount
        return ctx.write({ w in try w.createToken(account: c.accountId, deviceName: device, maxTokens: maxTokens, now: Timestamp.nowMs()) },
                         answer: { token in RequestContext.jsonResponse(201, token.json) })
    }

    /// The account's live tokens, oldest first, paged like every list.
    static func listTokens(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        return try ctx.list("tokens \(c.accountId)", read: { r, after, limit in
            var page = try r.activeTokens(account: c.accountId, after: after, limit: limit)
            let push = try r.pushReading().pushRegistrations(tokens: page.items.map(\.id))
            for i in page.items.indices { page.items[i].push = push[page.items[i].id] }
            return page
        }, item: { $0.json(current: c.tokenId, withPush: true) })
    }

    static func revokeToken(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let id = try ctx.id("tokenId")
        // Once the revocation is durable, the token's parked long-polls answer 401 (`LedgerApp.apply`).
        return ctx.write({ w in
            guard try w.revokeToken(id: id, account: c.accountId, at: Timestamp.nowMs()) else { throw LedgerStorageError.tokenNotFound }
        }, answer: { _ in RequestContext.noContent() })
    }
}

extension AccountRecord {
    /// The API JSON form.
    var json: JSONValue {
        .object(["id": .string(id), "handle": .string(handle), "displayName": .string(displayName),
                 "createdAt": .string(Timestamp.format(ms: createdAt))])
    }
}

extension TokenRecord {
    /// The API JSON form; `current`: the caller's token id, to mark the one in use.
    /// `withPush`: with `push` (what of the registration a list shows: never the key).
    func json(current: String? = nil, withPush: Bool = false) -> JSONValue {
        var o: JSONObject = ["id": .string(id), "deviceName": .string(deviceName),
                             "createdAt": .string(Timestamp.format(ms: createdAt)),
                             "lastUsedAt": lastUsedAt.map { .string(Timestamp.format(ms: $0)) } ?? .null]
        if let current { o["current"] = .bool(id == current) }
        if withPush {
            o["push"] = push.map { p in
                .object(["appId": .string(p.appId), "gateway": .string(p.gateway),
                         "registeredAt": .string(Timestamp.format(ms: p.registeredAt))])
            } ?? .null
        }
        return .object(o)
    }
}

extension IssuedToken {
    /// The API JSON form of a new token, with its secret (shown once).
    var json: JSONValue {
        .object(["id": .string(record.id), "secret": .string(secret), "deviceName": .string(record.deviceName),
                 "createdAt": .string(Timestamp.format(ms: record.createdAt))])
    }
}
