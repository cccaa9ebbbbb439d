import Foundation
import LedgerModel
import SQLiteKit

/// Accounts and device tokens.
enum AccountRoutes {
    static func register(_ r: inout Router) {
        r.add("POST", "/v1/accounts", create)
        r.add("GET", "/v1/me", me)
        r.add("POST", "/v1/tokens", createToken)
        r.add("GET", "/v1/tokens", listTokens)
        r.add("DELETE", "/v1/tokens/{tokenId}", revokeToken)
    }

    static func accountJSON(_ r: SQLiteRow) -> JSONValue {
        .object(["id": .string(r.string(0)), "handle": .string(r.string(1)), "displayName": .string(r.string(2)),
                 "createdAt": .string(Timestamp.format(ms: r.int(3)))])
    }

    static func tokenJSON(_ r: SQLiteRow, current: String? = nil) -> JSONValue {
        var o: JSONObject = ["id": .string(r.string(0)), "deviceName": .string(r.string(1)),
                             "createdAt": .string(Timestamp.format(ms: r.int(2))),
                             "lastUsedAt": r.optionalInt(3).map { .string(Timestamp.format(ms: $0)) } ?? .null]
        if let current { o["current"] = .bool(r.string(0) == current) }
        return .object(o)
    }

    /// Creates an account with its first token; shared by the API and the admin command.
    static func createAccount(_ db: SQLiteConnection, handle: String, displayName: String, deviceName: String) throws -> JSONValue {
        if try db.queryOne("SELECT 1 FROM accounts WHERE handle = ?", [.text(handle)]) != nil {
            throw APIError(409, "handle_taken", "The handle \(handle) is taken.")
        }
        let id = UUID().lowercased
        let now = Timestamp.nowMs()
        try db.run("INSERT INTO accounts (id, handle, display_name, created_at) VALUES (?, ?, ?, ?)",
                   [.text(id), .text(handle), .text(displayName), .integer(now)])
        let token = try insertToken(db, account: id, deviceName: deviceName)
        let account = try db.queryOne("SELECT id, handle, display_name, created_at FROM accounts WHERE id = ?", [.text(id)])!
        return .object(["account": accountJSON(account), "token": token])
    }

    static func insertToken(_ db: SQLiteConnection, account: String, deviceName: String) throws -> JSONValue {
        let secret = TokenSecret.generate()
        let id = UUID().lowercased
        let now = Timestamp.nowMs()
        try db.run("INSERT INTO tokens (id, account_id, hash, device_name, created_at) VALUES (?, ?, ?, ?, ?)",
                   [.text(id), .text(account), .blob(TokenSecret.sha256(secret)), .text(deviceName), .integer(now)])
        return .object(["id": .string(id), "secret": .string(secret), "deviceName": .string(deviceName),
                        "createdAt": .string(Timestamp.format(ms: now))])
    }

    static func create(_ ctx: RequestContext) throws -> Reply {
        var b = try ctx.body()
        b.allowOnly(["handle", "displayName", "deviceName"])
        let handle = b.string("handle", required: true)
        if let h = handle, case .failure(let e) = Validation.handle(h) { b.fail("handle", e.message) }
        let name = b.name("displayName", required: true)
        let device = b.has("deviceName") ? b.name("deviceName") : "default"
        try b.check()
        if ctx.services.configuration.registration == .closed {
            throw APIError(403, "registration_closed", "This server does not accept new accounts; ask its administrator.")
        }
        if let retry = ctx.services.registrationLimiter.take(ctx.clientAddress) {
            var e = APIError(429, "registration_rate_limited",
                             "Too many accounts were registered from this address; retry in \(retry) s.")
            e.headers.set("Retry-After", String(retry))
            throw e
        }
        return ctx.write { db in
            RequestContext.jsonResponse(201, try createAccount(db, handle: handle!, displayName: name!, deviceName: device ?? "default"))
        }
    }

    static func me(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        return try ctx.services.reads.with { db in
            guard let a = try db.queryOne("SELECT id, handle, display_name, created_at FROM accounts WHERE id = ?", [.text(c.accountId)]),
                  let t = try db.queryOne("SELECT id, device_name, created_at, last_used_at FROM tokens WHERE id = ?", [.text(c.tokenId)]) else {
                throw APIError.unauthenticated()
            }
            return ctx.json(200, .object(["account": accountJSON(a), "token": tokenJSON(t)]))
        }
    }

    static func createToken(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        var b = try ctx.body()
        b.allowOnly(["deviceName"])
        let device = b.name("deviceName", required: true)
        try b.check()
        return ctx.write { db in
            RequestContext.jsonResponse(201, try insertToken(db, account: c.accountId, deviceName: device!))
        }
    }

    static func listTokens(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        return try ctx.services.reads.with { db in
            let rows = try db.query("SELECT id, device_name, created_at, last_used_at FROM tokens WHERE account_id = ? AND revoked_at IS NULL ORDER BY created_at, id", [.text(c.accountId)])
            return ctx.json(200, .object(["items": .array(rows.map { tokenJSON($0, current: c.tokenId) }), "nextCursor": .null]))
        }
    }

    static func revokeToken(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let id = try ctx.id("tokenId")
        let notifier = ctx.services.notifier
        return ctx.write(revokesTokens: true, deferredAnswer: { db in
            try db.run("UPDATE tokens SET revoked_at = ? WHERE id = ? AND account_id = ? AND revoked_at IS NULL",
                       [.integer(Timestamp.nowMs()), .text(id), .text(c.accountId)])
            guard db.changes == 1 else { throw APIError.notFound("No such token.") }
            // Once the revocation is durable, the token's parked long-polls answer 401.
            return { notifier.notify(tokens: [id]); return RequestContext.noContent() }
        })
    }
}
