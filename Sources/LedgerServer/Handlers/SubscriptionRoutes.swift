import Foundation
import LedgerCore
import LedgerModel

/// The owner's App Store subscription, the household's entitlement, and the signed
/// entitlement token devices cache.
enum SubscriptionRoutes {
    /// The configured verifier; 503 without a bundle id. Asked only after the caller has
    /// passed authentication and the access check, so the 503 reveals nothing.
    static func service(_ ctx: RequestContext) throws -> SubscriptionService {
        guard let s = ctx.services.subscriptions else {
            throw APIError(503, "subscriptions_not_configured", "This server has no App Store bundle id configured.")
        }
        return s
    }

    static func time(_ ms: Int64?) -> JSONValue { ms.map { .string(Timestamp.format(ms: $0)) } ?? .null }

    /// What a household is entitled to at `now` (ms).
    struct Entitlement {
        var registered: SubscriptionRecord?
        var state: PurchaseState?
        var pro: Bool
        var reason: String
        /// When the state ends by itself, if it does.
        var endsAt: Int64?

        init(_ registered: SubscriptionRecord?, service: SubscriptionService, now: Int64) {
            self.registered = registered
            guard let event = registered?.purchase.event else {
                pro = false; reason = "no_subscription"
                return
            }
            let (state, endsAt) = PurchaseState.derive(event, now: now)
            self.state = state
            self.endsAt = endsAt
            if let refusal = service.configurationRefusal(event) {
                pro = false; reason = refusal
            } else {
                pro = state.isPro; reason = state.rawValue
            }
        }
    }

    static func subscriptionJSON(_ r: SubscriptionRecord, _ e: Entitlement) -> JSONValue {
        let p = r.purchase.event
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
        _ = try ctx.read { try $0.membership(household: household, account: c.accountId, need: .owner) }
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
        return ctx.write({ w in
            // An older upload than the purchase's newest event (a notification that arrived
            // first, a refund) changes nothing: the household gets the newest state.
            let now = Timestamp.nowMs()
            return (try w.registerSubscription(household: household, owner: c.accountId, upload: upload, now: now), now)
        }, answer: { written in
            let (r, now) = written
            return RequestContext.jsonResponse(200, subscriptionJSON(r, Entitlement(r, service: svc, now: now)))
        })
    }

    static func get(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        return try ctx.read { r in
            _ = try r.membership(household: household, account: c.accountId, need: .owner)
            let svc = try service(ctx)
            guard let s = try r.subscription(household: household) else { throw LedgerStorageError.noSubscription }
            return ctx.json(200, subscriptionJSON(s, Entitlement(s, service: svc, now: Timestamp.nowMs())))
        }
    }

    static func delete(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        return ctx.write({ w in
            _ = try w.membership(household: household, account: c.accountId, need: .owner)
            _ = try service(ctx)
            try w.removeSubscription(household: household)
        }, answer: { _ in RequestContext.noContent() })
    }

    /// A member's view of the household's entitlement at request time.
    static func memberEntitlement(_ ctx: RequestContext, now: Int64) throws -> (household: String, Entitlement) {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        return try ctx.read { r in
            _ = try r.membership(household: household, account: c.accountId, need: .read)
            let svc = try service(ctx)
            return (household, Entitlement(try r.subscription(household: household), service: svc, now: now))
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
            "productId": p.map { .string($0.event.productId) } ?? .null,
            "expiresAt": time(p?.event.expiresAt),
            "graceUntil": time(p?.event.graceUntil),
            "willAutoRenew": p?.event.autoRenew.map { .bool($0) } ?? .null,
            "grantedByAccountId": e.registered.map { .string($0.grantedBy) } ?? .null,
            "source": p.map { .string($0.event.source) } ?? .null,
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
            "productId": e.registered.map { .string($0.purchase.event.productId) } ?? .null,
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
