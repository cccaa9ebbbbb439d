import Foundation
import LedgerModel
import SQLiteKit
import StoreKitJWS

/// One verified event in a purchase's life: an owner's upload or an App Store Server
/// Notification, reduced to what decides the entitlement.
struct PurchaseEvent {
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
    var source: String
    var signedTransaction: String
    var signedRenewalInfo: String?

    init(transaction t: JWSTransactionDecodedPayload, renewal r: JWSRenewalInfoDecodedPayload?,
         environment: String, productId: String, signedDate: Int64, key: String, source: String,
         signedTransaction: String, signedRenewalInfo: String?, notification: ResponseBodyV2DecodedPayload? = nil) {
        func ms(_ d: Date?) -> Int64? { d.map(JWSTransactionDecodedPayload.milliseconds) }
        originalTransactionId = t.originalTransactionId ?? t.transactionId ?? ""
        self.environment = environment
        self.productId = productId
        expiresAt = ms(t.expiresDate)
        revokedAt = ms(t.revocationDate)
        graceUntil = ms(r?.gracePeriodExpiresDate)
        billingRetry = r?.isInBillingRetryPeriod ?? false
        autoRenew = r?.autoRenewStatus.map { $0 == 1 }
        appleStatus = notification?.data?.status
        type = notification?.notificationType
        subtype = notification?.subtype
        self.signedDate = signedDate
        self.key = key
        self.source = source
        self.signedTransaction = signedTransaction
        self.signedRenewalInfo = signedRenewalInfo
    }
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
    static func derive(_ p: StoredPurchase, now: Int64) -> (PurchaseState, endsAt: Int64?) {
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

/// A purchase as stored in `app_store_purchases`.
struct StoredPurchase {
    var originalTransactionId: String
    var environment: String
    var productId: String
    var expiresAt: Int64?
    var revokedAt: Int64?
    var graceUntil: Int64?
    var billingRetry: Bool
    var autoRenew: Bool?
    var appleStatus: Int?
    var type: String?
    var source: String
    var updatedAt: Int64

    static let columns = """
        original_transaction_id, environment, product_id, expires_at, revoked_at, grace_until, billing_retry,
        auto_renew, apple_status, event_type, source, updated_at
        """
}

extension StoredPurchase {
    /// Reads ``columns`` starting at column `i`.
    init(_ r: SQLiteRow, from i: Int = 0) {
        originalTransactionId = r.string(i)
        environment = r.string(i + 1)
        productId = r.string(i + 2)
        expiresAt = r.optionalInt(i + 3)
        revokedAt = r.optionalInt(i + 4)
        graceUntil = r.optionalInt(i + 5)
        billingRetry = r.bool(i + 6)
        autoRenew = r.optionalInt(i + 7).map { $0 != 0 }
        appleStatus = r.optionalInt(i + 8).map { Int($0) }
        type = r.optionalString(i + 9)
        source = r.string(i + 10)
        updatedAt = r.int(i + 11)
    }
}

/// The SQL of purchases and notifications.
enum PurchaseStore {
    enum Applied { case applied, stale }

    /// Stores `e` as its purchase's newest event unless the stored one is not older by
    /// `(signedDate, key)`: any arrival order ends in the same state.
    static func apply(_ db: SQLiteConnection, _ e: PurchaseEvent, now: Int64) throws -> Applied {
        if let r = try db.queryOne("SELECT event_signed_date, event_key FROM app_store_purchases WHERE original_transaction_id = ?",
                                   [.text(e.originalTransactionId)]) {
            let (date, key) = (r.int(0), r.string(1))
            if date > e.signedDate || (date == e.signedDate && key >= e.key) { return .stale }
        }
        try db.run("""
            INSERT INTO app_store_purchases (original_transaction_id, environment, product_id, expires_at, revoked_at, grace_until,
                billing_retry, auto_renew, apple_status, event_type, event_subtype, event_signed_date, event_key, source,
                signed_transaction, signed_renewal_info, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(original_transaction_id) DO UPDATE SET environment = excluded.environment,
                product_id = excluded.product_id, expires_at = excluded.expires_at, revoked_at = excluded.revoked_at,
                grace_until = excluded.grace_until, billing_retry = excluded.billing_retry, auto_renew = excluded.auto_renew,
                apple_status = excluded.apple_status, event_type = excluded.event_type, event_subtype = excluded.event_subtype,
                event_signed_date = excluded.event_signed_date, event_key = excluded.event_key, source = excluded.source,
                signed_transaction = excluded.signed_transaction, signed_renewal_info = excluded.signed_renewal_info,
                updated_at = excluded.updated_at
            """, [.text(e.originalTransactionId), .text(e.environment), .text(e.productId), .optionalInteger(e.expiresAt),
                  .optionalInteger(e.revokedAt), .optionalInteger(e.graceUntil), .bool(e.billingRetry),
                  e.autoRenew.map { .bool($0) } ?? .null, e.appleStatus.map { .int($0) } ?? .null,
                  .optionalText(e.type), .optionalText(e.subtype), .integer(e.signedDate), .text(e.key), .text(e.source),
                  .text(e.signedTransaction), .optionalText(e.signedRenewalInfo), .integer(now)])
        return .applied
    }

    static func purchase(_ db: SQLiteConnection, originalTransactionId: String) throws -> StoredPurchase? {
        try db.queryOne("SELECT \(StoredPurchase.columns) FROM app_store_purchases WHERE original_transaction_id = ?",
                        [.text(originalTransactionId)]).map { StoredPurchase($0) }
    }

    /// The households whose subscription is this purchase.
    static func households(_ db: SQLiteConnection, originalTransactionId: String) throws -> [String] {
        try db.query("SELECT household_id FROM subscriptions WHERE original_transaction_id = ?",
                     [.text(originalTransactionId)]).map { $0.string(0) }
    }

    /// How long verified notifications, and purchases no household has registered, are kept.
    static let retentionMs: Int64 = 90 * 24 * 3600 * 1000

    /// Forgets notifications received, and unregistered purchases last changed, before the retention window.
    static func prune(_ db: SQLiteConnection, now: Int64) throws {
        let cutoff = now - retentionMs
        try db.run("DELETE FROM app_store_notifications WHERE received_at < ?", [.integer(cutoff)])
        try db.run("""
            DELETE FROM app_store_purchases WHERE updated_at < ? AND NOT EXISTS
                (SELECT 1 FROM subscriptions s WHERE s.original_transaction_id = app_store_purchases.original_transaction_id)
            """, [.integer(cutoff)])
    }
}
