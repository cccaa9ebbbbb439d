import Foundation
import LedgerModel
import SQLiteKit

/// The owner's App Store subscription and the household's entitlement.
enum SubscriptionRoutes {
    static func register(_ r: inout Router) {
        r.add("PUT", "/v1/households/{id}/subscription", put)
        r.add("GET", "/v1/households/{id}/subscription", get)
        r.add("DELETE", "/v1/households/{id}/subscription", delete)
        r.add("GET", "/v1/households/{id}/entitlement", entitlement)
    }

    /// The configured verifier; 503 without a bundle id. Asked only after the caller has
    /// passed authentication and the access check, so the 503 reveals nothing.
    static func service(_ ctx: RequestContext) throws -> SubscriptionService {
        guard let s = ctx.services.subscriptions else {
            throw APIError(503, "subscriptions_not_configured", "This server has no App Store bundle id configured.")
        }
        return s
    }

    static func statusJSON(_ v: SubscriptionService.Verified, verifiedAt: Int64) -> JSONValue {
        .object([
            "status": .string(v.status.active ? "active" : "expired"),
            "productId": .string(v.status.productId),
            "originalTransactionId": .string(v.status.originalTransactionId),
            "expiresAt": v.status.expiresAt.map { .string(Timestamp.format(ms: Int64($0.timeIntervalSince1970 * 1000))) } ?? .null,
            "environment": .string(v.status.environment),
            "verifiedAt": .string(Timestamp.format(ms: verifiedAt)),
        ])
    }

    static func put(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        try ctx.services.reads.with { db in _ = try Access.check(db, household: household, account: c.accountId, need: .owner) }
        let svc = try service(ctx)
        var b = try ctx.body()
        b.allowOnly(["signedTransaction"])
        let jws = b.string("signedTransaction", required: true)
        try b.check()
        guard jws!.utf8.count <= 64 * 1024 else { throw APIError.validation("signedTransaction", "is longer than 64 KiB") }
        let verified = try svc.verify(jws!, ownerAccountId: c.accountId)
        return ctx.write(touching: [household]) { db in
            let m = try Access.check(db, household: household, account: c.accountId, need: .owner)
            let now = Timestamp.nowMs()
            let expires = verified.status.expiresAt.map { Int64($0.timeIntervalSince1970 * 1000) }
            try db.run("""
                INSERT INTO subscriptions (household_id, signed_transaction, product_id, original_transaction_id, expires_at, environment, verified_at, granted_by)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(household_id) DO UPDATE SET signed_transaction = excluded.signed_transaction, product_id = excluded.product_id,
                    original_transaction_id = excluded.original_transaction_id, expires_at = excluded.expires_at,
                    environment = excluded.environment, verified_at = excluded.verified_at, granted_by = excluded.granted_by
                """, [.text(household), .text(jws!), .text(verified.status.productId), .text(verified.status.originalTransactionId),
                      .optionalInteger(expires), .text(verified.status.environment), .integer(now), .text(m.ownerAccountId)])
            _ = try LedgerStore.nextSeq(db, household)
            return RequestContext.jsonResponse(200, statusJSON(verified, verifiedAt: now))
        }
    }

    static func stored(_ db: SQLiteConnection, _ household: String) throws -> (jws: String, verifiedAt: Int64, grantedBy: String)? {
        try db.queryOne("SELECT signed_transaction, verified_at, granted_by FROM subscriptions WHERE household_id = ?", [.text(household)])
            .map { ($0.string(0), $0.int(1), $0.string(2)) }
    }

    static func get(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        return try ctx.services.reads.with { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .owner)
            let svc = try service(ctx)
            guard let s = try stored(db, household) else {
                throw APIError(404, "no_subscription", "No subscription is stored for this household.")
            }
            let v = try svc.verify(s.jws, ownerAccountId: s.grantedBy)
            return ctx.json(200, statusJSON(v, verifiedAt: s.verifiedAt))
        }
    }

    static func delete(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        return ctx.write(touching: [household]) { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .owner)
            _ = try service(ctx)
            try db.run("DELETE FROM subscriptions WHERE household_id = ?", [.text(household)])
            if db.changes > 0 { _ = try LedgerStore.nextSeq(db, household) }
            return RequestContext.noContent()
        }
    }

    /// Evaluated at request time: an expired or no-longer-valid purchase grants nothing.
    static func entitlement(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        return try ctx.services.reads.with { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .read)
            let svc = try service(ctx)
            guard let s = try stored(db, household) else {
                return ctx.json(200, .object(["pro": false, "productId": .null, "expiresAt": .null,
                                              "grantedByAccountId": .null, "reason": "no_subscription"]))
            }
            do {
                let v = try svc.verify(s.jws, ownerAccountId: s.grantedBy)
                let expires: JSONValue = v.status.expiresAt.map { .string(Timestamp.format(ms: Int64($0.timeIntervalSince1970 * 1000))) } ?? .null
                return ctx.json(200, .object(["pro": .bool(v.status.active), "productId": .string(v.status.productId),
                                              "expiresAt": expires, "grantedByAccountId": .string(s.grantedBy),
                                              "reason": .string(v.status.active ? "active" : "expired")]))
            } catch let e as APIError {
                return ctx.json(200, .object(["pro": false, "productId": .null, "expiresAt": .null,
                                              "grantedByAccountId": .string(s.grantedBy), "reason": .string(e.code)]))
            }
        }
    }
}
