import Foundation
import LedgerModel
import SQLiteKit

/// The owner's App Store subscription, the household's entitlement, and the signed
/// entitlement token devices cache.
enum SubscriptionRoutes {
    static func register(_ r: inout Router) {
        r.add("PUT", "/v1/households/{id}/subscription", put)
        r.add("GET", "/v1/households/{id}/subscription", get)
        r.add("DELETE", "/v1/households/{id}/subscription", delete)
        r.add("GET", "/v1/households/{id}/entitlement", entitlement)
        r.add("GET", "/v1/households/{id}/entitlement/token", token)
        r.add("GET", "/v1/entitlement-keys", keys)
    }

    /// The configured verifier; 503 without a bundle id. Asked only after the caller has
    /// passed authentication and the access check, so the 503 reveals nothing.
    static func service(_ ctx: RequestContext) throws -> SubscriptionService {
        guard let s = ctx.services.subscriptions else {
            throw APIError(503, "subscriptions_not_configured", "This server has no App Store bundle id configured.")
        }
        return s
    }

    static func time(_ ms: Int64?) -> JSONValue { ms.map { .string(Timestamp.format(ms: $0)) } ?? .null }

    /// A household's stored subscription: who registered it, when, and the purchase's newest event.
    struct Registered {
        var grantedBy: String
        var verifiedAt: Int64
        var purchase: StoredPurchase
    }

    static func registered(_ db: SQLiteConnection, _ household: String) throws -> Registered? {
        let columns = StoredPurchase.columns.split(separator: ",").map { "p." + $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        return try db.queryOne("""
            SELECT s.granted_by, s.verified_at, \(columns.joined(separator: ", ")) FROM subscriptions s
            JOIN app_store_purchases p ON p.original_transaction_id = s.original_transaction_id WHERE s.household_id = ?
            """, [.text(household)]).map { Registered(grantedBy: $0.string(0), verifiedAt: $0.int(1), purchase: StoredPurchase($0, from: 2)) }
    }

    /// What a household is entitled to at `now` (ms).
    struct Entitlement {
        var registered: Registered?
        var state: PurchaseState?
        var pro: Bool
        var reason: String
        /// When the state ends by itself, if it does.
        var endsAt: Int64?

        init(_ registered: Registered?, service: SubscriptionService, now: Int64) {
            self.registered = registered
            guard let registered else {
                pro = false; reason = "no_subscription"
                return
            }
            let (state, endsAt) = PurchaseState.derive(registered.purchase, now: now)
            self.state = state
            self.endsAt = endsAt
            if let refusal = service.configurationRefusal(registered.purchase) {
                pro = false; reason = refusal
            } else {
                pro = state.isPro; reason = state.rawValue
            }
        }
    }

    static func subscriptionJSON(_ r: Registered, _ e: Entitlement) -> JSONValue {
        let p = r.purchase
        return .object([
            "status": .string(e.pro ? "active" : "expired"),
            "state": e.state.map { .string($0.rawValue) } ?? .null,
            "productId": .string(p.productId),
            "originalTransactionId": .string(p.originalTransactionId),
            "expiresAt": time(p.expiresAt),
            "environment": .string(p.environment),
            "verifiedAt": .string(Timestamp.format(ms: r.verifiedAt)),
            "source": .string(p.source),
        ])
    }

    static func put(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        try ctx.services.reads.with { db in _ = try Access.check(db, household: household, account: c.accountId, need: .owner) }
        let svc = try service(ctx)
        var b = try ctx.body()
        b.allowOnly(["signedTransaction", "signedRenewalInfo"])
        let jws = b.string("signedTransaction", required: true)
        let renewal = b.string("signedRenewalInfo")
        try b.check()
        for (name, value) in [("signedTransaction", jws), ("signedRenewalInfo", renewal)] where (value?.utf8.count ?? 0) > 64 * 1024 {
            throw APIError.validation(name, "is longer than 64 KiB")
        }
        let upload = try svc.verifyUpload(transaction: jws!, renewalInfo: renewal, ownerAccountId: c.accountId)
        return ctx.write(touching: [household]) { db in
            let m = try Access.check(db, household: household, account: c.accountId, need: .owner)
            let now = Timestamp.nowMs()
            let s = upload.status
            try db.run("""
                INSERT INTO subscriptions (household_id, signed_transaction, product_id, original_transaction_id, expires_at, environment, verified_at, granted_by)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(household_id) DO UPDATE SET signed_transaction = excluded.signed_transaction, product_id = excluded.product_id,
                    original_transaction_id = excluded.original_transaction_id, expires_at = excluded.expires_at,
                    environment = excluded.environment, verified_at = excluded.verified_at, granted_by = excluded.granted_by
                """, [.text(household), .text(jws!), .text(s.productId), .text(upload.event.originalTransactionId),
                      .optionalInteger(upload.event.expiresAt), .text(s.environment), .integer(now), .text(m.ownerAccountId)])
            // An older upload than the purchase's newest event (a notification that arrived
            // first, a refund) changes nothing: the household gets the newest state.
            _ = try PurchaseStore.apply(db, upload.event, now: now)
            _ = try LedgerStore.nextSeq(db, household)
            guard let r = try registered(db, household) else { throw APIError.internal("The subscription was not stored.") }
            return RequestContext.jsonResponse(200, subscriptionJSON(r, Entitlement(r, service: svc, now: now)))
        }
    }

    static func get(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        return try ctx.services.reads.with { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .owner)
            let svc = try service(ctx)
            guard let r = try registered(db, household) else {
                throw APIError(404, "no_subscription", "No subscription is stored for this household.")
            }
            return ctx.json(200, subscriptionJSON(r, Entitlement(r, service: svc, now: Timestamp.nowMs())))
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

    /// A member's view of the household's entitlement at request time.
    static func memberEntitlement(_ ctx: RequestContext, now: Int64) throws -> (household: String, Entitlement) {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        return try ctx.services.reads.with { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .read)
            let svc = try service(ctx)
            return (household, Entitlement(try registered(db, household), service: svc, now: now))
        }
    }

    /// Evaluated at request time: an expired, refunded or no-longer-configured purchase grants nothing.
    static func entitlement(_ ctx: RequestContext) throws -> Reply {
        let (_, e) = try memberEntitlement(ctx, now: Timestamp.nowMs())
        let p = e.registered?.purchase
        return ctx.json(200, .object([
            "pro": .bool(e.pro),
            "state": e.state.map { .string($0.rawValue) } ?? .null,
            "reason": .string(e.reason),
            "productId": p.map { .string($0.productId) } ?? .null,
            "expiresAt": time(p?.expiresAt),
            "graceUntil": time(p?.graceUntil),
            "willAutoRenew": p?.autoRenew.map { .bool($0) } ?? .null,
            "grantedByAccountId": e.registered.map { .string($0.grantedBy) } ?? .null,
            "source": p.map { .string($0.source) } ?? .null,
            "updatedAt": time(p?.updatedAt),
        ]))
    }

    /// The entitlement as an ES256 JWS a device can keep and check offline until `exp`:
    /// `exp` is the earlier of now + TTL and the end of the current state.
    static func token(_ ctx: RequestContext) throws -> Reply {
        let now = Timestamp.nowMs()
        let (household, e) = try memberEntitlement(ctx, now: now)
        let issuedAt = now / 1000
        var expires = issuedAt + Int64(min(ctx.services.configuration.entitlementTokenTTL, 366 * 86_400))
        if e.pro, let end = e.endsAt { expires = min(expires, end / 1000) }
        let claims: JSONValue = .object([
            "iss": "kidledger", "sub": .string(household), "pro": .bool(e.pro),
            "state": e.state.map { .string($0.rawValue) } ?? .null,
            "productId": e.registered.map { .string($0.purchase.productId) } ?? .null,
            "iat": .int(issuedAt), "exp": .int(expires),
        ])
        let keys = ctx.services.entitlementKeys
        return ctx.json(200, .object(["token": .string(try keys.sign(claims)), "kid": .string(keys.signingKid),
                                      "expiresAt": time(expires * 1000)]),
                        headers: [("Cache-Control", "no-store")])
    }

    /// The public keys that verify entitlement tokens (JWKS); no authentication.
    static func keys(_ ctx: RequestContext) throws -> Reply {
        ctx.json(200, ctx.services.entitlementKeys.jwks, headers: [("Cache-Control", "public, max-age=300")])
    }
}
