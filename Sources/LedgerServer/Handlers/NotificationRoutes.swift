import Foundation
import LedgerModel
import SQLiteKit
import StoreKitJWS

/// `POST /v1/app-store/notifications`: App Store Server Notifications V2. No bearer token:
/// the signed payload proves itself, whoever relays it.
enum NotificationRoutes {
    static func register(_ r: inout Router) {
        r.add("POST", "/v1/app-store/notifications", post)
    }

    /// Largest request body accepted (Apple's notifications are a few KiB).
    static let maximumBody = 64 * 1024

    static func post(_ ctx: RequestContext) throws -> Reply {
        let limiter = ctx.services.notificationLimiter
        if let retry = limiter.retryAfter(ctx.clientAddress) {
            var e = APIError(429, "rate_limited", "Too many notifications from this address; retry later.")
            e.headers.set("Retry-After", String(retry))
            throw e
        }
        limiter.fail(ctx.clientAddress)
        guard ctx.request.body.count <= maximumBody else {
            throw APIError(413, "payload_too_large", "A notification body is at most 64 KiB.")
        }
        let svc = try SubscriptionRoutes.service(ctx)
        let body = try ctx.body()
        guard body.object.count == 1, case .string(let signedPayload)? = body.object["signedPayload"] else {
            throw APIError.badRequest("The body must be {\"signedPayload\": \"<JWS>\"} and nothing else.")
        }
        let notification = try svc.verifyNotification(signedPayload)
        let logger = ctx.services.logger
        ctx.services.writer.submit(WriteQueue.Job.returning({ db in
            let (outcome, households) = try record(db, notification, now: Timestamp.nowMs())
            return (outcome, WriteQueue.WriteEffects(touched: Set(households)))
        }, completion: { result in
            switch result {
            case .success(let outcome):
                logger.log(["event": "app_store_notification", "notificationUUID": .string(notification.verified.uuid),
                            "type": .string(notification.verified.type), "outcome": .string(outcome)])
                ctx.respond(RequestContext.jsonResponse(200, .object(["outcome": .string(outcome)])))
            case .failure(let e as APIError) where e.status < 500 || e.status == 503:
                ctx.respond(e)
            case .failure(let e):
                // Apple retries a notification that was not answered 200: say so.
                logger.log(["event": "error", "route": "app_store_notification", "error": .string(String(describing: e))])
                var p = APIError(503, "service_unavailable", "The notification could not be stored; send it again later.")
                p.headers.set("Retry-After", "60")
                ctx.respond(p)
            }
        }))
        return .pending
    }

    /// Records a verified notification and applies its event: `duplicate` (its UUID was seen),
    /// `ignored` (no entitlement change), `stale` (the purchase has a newer event),
    /// `unmatched` (no household registered the purchase yet; kept for when one does), or
    /// `applied`. Returns the outcome and the households whose entitlement changed.
    static func record(_ db: SQLiteConnection, _ n: SubscriptionService.Notification, now: Int64) throws -> (String, [String]) {
        let v = n.verified
        if try db.queryOne("SELECT 1 FROM app_store_notifications WHERE notification_uuid = ?", [.text(v.uuid)]) != nil {
            return ("duplicate", [])
        }
        try PurchaseStore.prune(db, now: now)
        var outcome = "ignored"
        var households: [String] = []
        if let event = n.event {
            switch try PurchaseStore.apply(db, event, now: now) {
            case .stale:
                outcome = "stale"
            case .applied:
                households = try PurchaseStore.households(db, originalTransactionId: event.originalTransactionId)
                for h in households { _ = try LedgerStore.nextSeq(db, h) }
                outcome = households.isEmpty ? "unmatched" : "applied"
            }
        }
        try db.run("""
            INSERT INTO app_store_notifications (notification_uuid, notification_type, subtype, original_transaction_id, signed_date, received_at, outcome)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [.text(v.uuid), .text(v.type), .optionalText(v.notification.subtype),
                  .optionalText(n.event?.originalTransactionId ?? v.transaction?.originalTransactionId),
                  .integer(v.notification.signedDate.map(JWSTransactionDecodedPayload.milliseconds) ?? 0), .integer(now), .text(outcome)])
        return (outcome, households)
    }
}
