import Foundation
import LedgerModel
import StoreKitJWS

/// One verified event in a purchase's life: an owner's upload or an App Store Server
/// Notification, reduced to what decides the entitlement.
struct PurchaseEvent: Sendable, Equatable {
    var originalTransactionId: String
    var environment: String
    var productId: String
    var expiresAt: Int64?
    var revokedAt: Int64?
    var graceUntil: Int64?
    var billingRetry: Bool
    /// `autoRenewStatus == 1`; nil without renewal info.
    var autoRenew: Bool?
    /// `data.status` of a notification (1 active … 5 revoked).
    var appleStatus: Int?
    var type: String?
    var subtype: String?
    /// The order of events: `signedDate` (ms), then the key (a notification's UUID; empty
    /// for an upload, so a notification signed in the same millisecond comes after it).
    var signedDate: Int64
    var key: String
    /// `upload` or `notification`.
    var source: String
    var signedTransaction: String
    var signedRenewalInfo: String?

    /// Whether this event comes after `other` in the purchase's life, by `(signedDate, key)`:
    /// only a newer event replaces the stored one, so any arrival order ends in the same state.
    func isNewer(than other: PurchaseEvent) -> Bool {
        signedDate != other.signedDate ? signedDate > other.signedDate : key > other.key
    }
}

extension PurchaseEvent {
    init(transaction t: JWSTransactionDecodedPayload, renewal r: JWSRenewalInfoDecodedPayload?,
         environment: String, productId: String, signedDate: Int64, key: String, source: String,
         signedTransaction: String, signedRenewalInfo: String?, notification: ResponseBodyV2DecodedPayload? = nil) {
        func ms(_ d: Date?) -> Int64? { d.map(JWSTransactionDecodedPayload.milliseconds) }
        self.init(originalTransactionId: t.originalTransactionId ?? t.transactionId ?? "", environment: environment,
                  productId: productId, expiresAt: ms(t.expiresDate), revokedAt: ms(t.revocationDate),
                  graceUntil: ms(r?.gracePeriodExpiresDate), billingRetry: r?.isInBillingRetryPeriod ?? false,
                  autoRenew: r?.autoRenewStatus.map { $0 == 1 }, appleStatus: notification?.data?.status,
                  type: notification?.notificationType, subtype: notification?.subtype, signedDate: signedDate, key: key,
                  source: source, signedTransaction: signedTransaction, signedRenewalInfo: signedRenewalInfo)
    }
}

/// What identifies a purchase: its App Store environment and original transaction id. The
/// sandbox numbers its transactions apart from production, so the same id in two
/// environments is two purchases, and an event of one never changes the other.
struct PurchaseKey: Sendable, Hashable {
    var environment: String
    var originalTransactionId: String
}

extension PurchaseEvent {
    /// The purchase this event belongs to.
    var purchaseKey: PurchaseKey { PurchaseKey(environment: environment, originalTransactionId: originalTransactionId) }
}

/// A purchase as stored: its newest event, and when that was stored.
struct StoredPurchase: Sendable, Equatable {
    var event: PurchaseEvent
    var updatedAt: Int64
}

/// A household subscription's state, derived at request time from the newest event.
enum PurchaseState: String {
    case active, inGracePeriod, billingRetry, expired, refunded, revoked

    /// Whether the state grants Pro.
    var isPro: Bool { self == .active || self == .inGracePeriod }

    /// The state at `now` (ms) and when it ends by itself (nil: only a new event ends it).
    ///
    /// A revocation is a refund unless the App Store said `REVOKE` (or status 5 without a
    /// refund); before its expiry a purchase is active unless the App Store said expired
    /// (status 2); past it, a grace period in force is `inGracePeriod`, a billing retry
    /// (renewal info, or status 3) `billingRetry`, anything else `expired`. Expiry ends Pro
    /// even when no notification arrives.
    static func derive(_ p: PurchaseEvent, now: Int64) -> (PurchaseState, endsAt: Int64?) {
        if p.revokedAt != nil {
            let revoke = p.type == "REVOKE" || (p.appleStatus == 5 && p.type != "REFUND")
            return (revoke ? .revoked : .refunded, nil)
        }
        if p.appleStatus == 5 { return (.revoked, nil) }
        if p.appleStatus != 2, p.expiresAt.map({ $0 > now }) ?? true { return (.active, p.expiresAt) }
        if let grace = p.graceUntil, grace > now { return (.inGracePeriod, grace) }
        if p.billingRetry || p.appleStatus == 3 { return (.billingRetry, nil) }
        return (.expired, nil)
    }
}
