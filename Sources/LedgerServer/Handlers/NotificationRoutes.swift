import Foundation
import LedgerCore
import LedgerModel

/// `POST /v1/app-store/notifications`: App Store Server Notifications V2. No bearer token:
/// the signed payload proves itself, whoever relays it.
enum NotificationRoutes {
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
        // A server without App Store configuration has no notification endpoint to speak
        // of: 404, not 503, which says "try again later" (to the App Store, too).
        guard let svc = ctx.services.subscriptions else {
            throw APIError(404, "subscriptions_not_configured", "This server has no App Store bundle id configured.")
        }
        let body = try ctx.body()
        guard body.object.count == 1, case .string(let signedPayload)? = body.object["signedPayload"] else {
            throw APIError.badRequest("The body must be {\"signedPayload\": \"<JWS>\"} and nothing else.")
        }
        let notification = try svc.verifyNotification(signedPayload)
        let (record, event) = (notification.record, notification.event)
        let logger = ctx.services.logger
        ctx.services.storage.write({ w in
            try w.recordNotification(record, event: event, now: Timestamp.nowMs())
        }, completion: { result in
            switch result {
            case .success(let outcome):
                logger.log(["event": "app_store_notification", "notificationUUID": .string(record.uuid),
                            "type": .string(record.type), "outcome": .string(outcome.rawValue)])
                ctx.respond(RequestContext.jsonResponse(200, .object(["outcome": .string(outcome.rawValue)])))
            case .failure(let e):
                // Apple retries a notification that was not answered 200.
                let (answer, unexpected) = LedgerStorageError.notificationFailure(e)
                if unexpected {
                    logger.log(["event": "error", "route": "app_store_notification", "error": .string(String(describing: e))])
                }
                ctx.respond(answer)
            }
        })
        return .pending
    }
}
