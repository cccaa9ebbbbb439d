import LedgerModel

/// One verified event in a purchase's life: an owner's upload or an App Store Server
/// Notification, reduced to what decides the entitlement.
package struct PurchaseEvent: Sendable, Equatable {
    package var originalTransactionId: String
    package var environment: String
    package var productId: String
    package var expiresAt: Int64?
    package var revokedAt: Int64?
    package var graceUntil: Int64?
    package var billingRetry: Bool
    /// `autoRenewStatus == 1`; nil without renewal info.
    package var autoRenew: Bool?
    /// `data.status` of a notification (1 active … 5 revoked).
    package var appleStatus: Int?
    package var type: String?
    package var subtype: String?
    /// The order of events: `signedDate` (ms), then the key (a notification's UUID; empty
    /// for an upload, so a notification signed in the same millisecond comes after it).
    package var signedDate: Int64
    package var key: String
    /// `upload` or `notification`.
    package var source: String
    package var signedTransaction: String
    package var signedRenewalInfo: String?

    @usableFromInline package init(originalTransactionId: String, environment: String, productId: String, expiresAt: Int64? = nil,
                 revokedAt: Int64? = nil, graceUntil: Int64? = nil, billingRetry: Bool, autoRenew: Bool? = nil,
                 appleStatus: Int? = nil, type: String? = nil, subtype: String? = nil, signedDate: Int64, key: String,
                 source: String, signedTransaction: String, signedRenewalInfo: String? = nil) {
        (self.originalTransactionId, self.environment, self.productId) = (originalTransactionId, environment, productId)
        (self.expiresAt, self.revokedAt, self.graceUntil) = (expiresAt, revokedAt, graceUntil)
        (self.billingRetry, self.autoRenew, self.appleStatus, self.type) = (billingRetry, autoRenew, appleStatus, type)
        (self.subtype, self.signedDate, self.key, self.source) = (subtype, signedDate, key, source)
        (self.signedTransaction, self.signedRenewalInfo) = (signedTransaction, signedRenewalInfo)
    }

    /// Whether this event comes after `other` in the purchase's life, by `(signedDate, key)`:
    /// only a newer event replaces the stored one, so any arrival order ends in the same state.
    package func isNewer(than other: PurchaseEvent) -> Bool {
        signedDate != other.signedDate ? signedDate > other.signedDate : key > other.key
    }
}

/// What identifies a purchase: its App Store environment and original transaction id. The
/// sandbox numbers its transactions apart from production, so the same id in two
/// environments is two purchases, and an event of one never changes the other.
package struct PurchaseKey: Sendable, Hashable {
    package var environment: String
    package var originalTransactionId: String

    @usableFromInline package init(environment: String, originalTransactionId: String) {
        (self.environment, self.originalTransactionId) = (environment, originalTransactionId)
    }
}

extension PurchaseEvent {
    /// The purchase this event belongs to.
    package var purchaseKey: PurchaseKey { PurchaseKey(environment: environment, originalTransactionId: originalTransactionId) }
}

/// A purchase as stored: its newest event, and when that was stored.
package struct StoredPurchase: Sendable, Equatable {
    package var event: PurchaseEvent
    package var updatedAt: Int64

    @usableFromInline package init(event: PurchaseEvent, updatedAt: Int64) {
        (self.event, self.updatedAt) = (event, updatedAt)
    }
}

/// A household subscription's state, derived at request time from the newest event.
package enum PurchaseState: String {
    case active, inGracePeriod, billingRetry, expired, refunded, revoked

    /// Whether the state grants Pro.
    package var isPro: Bool { self == .active || self == .inGracePeriod }

    /// The state at `now` (ms) and when it ends by itself (nil: only a new event ends it).
    ///
    /// A revocation is a refund unless the App Store said `REVOKE` (or status 5 without a
    /// refund); before its expiry a purchase is active unless the App Store said expired
    /// (status 2); past it, a grace period in force is `inGracePeriod`, a billing retry
    /// (renewal info, or status 3) `billingRetry`, anything else `expired`. Expiry ends Pro
    /// even when no notification arrives.
    package static func derive(_ p: PurchaseEvent, now: Int64) -> (PurchaseState, endsAt: Int64?) {
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
