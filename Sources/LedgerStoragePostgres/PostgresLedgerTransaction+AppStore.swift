#if Postgres
import LedgerCore
import LedgerModel
import PostgresKit

/// The App Store subscription primitives over the schema's migration 2, purchases keyed by
/// (environment, original transaction id) since migration 3.
///
/// In a write, a purchase is read `FOR UPDATE`: events of one purchase from several
/// processes are compared and stored one after another, each against the committed newest.
/// Every write that locks a purchase and households locks the purchase first (the lock
/// order in `LedgerStorage+Subscriptions.swift`), so uploads and notifications never deadlock.
/// Two first events of one purchase, or two deliveries of one notification, race on the
/// primary key; the loser runs again (`PostgresLedgerStorage`) and finds the winner's row.
extension PostgresLedgerTransaction {
    /// The event's values in `StoredPurchase.columns` order, stored at `at`.
    private static func values(_ e: PurchaseEvent, at: Int64) -> [PGValue] {
        [.text(e.originalTransactionId), .text(e.environment), .text(e.productId), .optionalTimestamp(ms: e.expiresAt),
         .optionalTimestamp(ms: e.revokedAt), .optionalTimestamp(ms: e.graceUntil), .bool(e.billingRetry),
         e.autoRenew.map { .bool($0) } ?? .null, .optionalInt(e.appleStatus.map { Int64($0) }), .optionalText(e.type),
         .optionalText(e.subtype), .timestamp(ms: e.signedDate), .text(e.key), .text(e.source), .text(e.signedTransaction),
         .optionalText(e.signedRenewalInfo), .timestamp(ms: at)]
    }

    // MARK: reading

    private static let subscriptionQuery = """
        SELECT s.granted_by, s.verified_at, \(StoredPurchase.columns(of: "p")) FROM subscriptions s
        JOIN app_store_purchases p ON p.environment = s.environment AND p.original_transaction_id = s.original_transaction_id
        WHERE s.household_id = $1
        """

    func subscription(household: String) throws -> SubscriptionRecord? {
        try lock(household)
        return try db.queryOne(Self.subscriptionQuery, [.uuid(household)]).map { SubscriptionRecord(row: $0) }
    }

    private static let purchaseSQL =
        "SELECT \(StoredPurchase.columns) FROM app_store_purchases WHERE environment = $1 AND original_transaction_id = $2"
    private static let purchaseForUpdateSQL = purchaseSQL + " FOR UPDATE"

    func purchase(_ key: PurchaseKey) throws -> StoredPurchase? {
        try db.queryOne(writing ? Self.purchaseForUpdateSQL : Self.purchaseSQL,
                        [.text(key.environment), .text(key.originalTransactionId)]).map { StoredPurchase(row: $0) }
    }

    func households(subscribedTo key: PurchaseKey) throws -> [String] {
        try db.query("""
            /* global: subscriptions of a purchase */
            SELECT household_id FROM subscriptions WHERE environment = $1 AND original_transaction_id = $2
            ORDER BY household_id
            """, [.text(key.environment), .text(key.originalTransactionId)]).rows.map { $0.uuid(0) }
    }

    func notificationSeen(uuid: String) throws -> Bool {
        try db.queryOne("SELECT 1 FROM app_store_notifications WHERE notification_uuid = $1", [.text(uuid)]) != nil
    }

    // MARK: writing

    func setSubscription(household: String, upload e: PurchaseEvent, grantedBy: String, at: Int64) throws {
        try lock(household)
        try db.query("""
            INSERT INTO subscriptions (household_id, signed_transaction, product_id, original_transaction_id, expires_at, environment,
                                       verified_at, granted_by)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            ON CONFLICT (household_id) DO UPDATE SET signed_transaction = excluded.signed_transaction,
                product_id = excluded.product_id, original_transaction_id = excluded.original_transaction_id,
                expires_at = excluded.expires_at, environment = excluded.environment, verified_at = excluded.verified_at,
                granted_by = excluded.granted_by
            """, [.uuid(household), .text(e.signedTransaction), .text(e.productId), .text(e.originalTransactionId),
                  .optionalTimestamp(ms: e.expiresAt), .text(e.environment), .timestamp(ms: at), .uuid(grantedBy)])
    }

    func deleteSubscription(household: String) throws -> Bool {
        try lock(household)
        return try db.query("DELETE FROM subscriptions WHERE household_id = $1", [.uuid(household)]).affectedRows > 0
    }

    private static let insertPurchaseSQL = """
        INSERT INTO app_store_purchases (\(StoredPurchase.columns))
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
        """

    func insertPurchase(_ e: PurchaseEvent, at: Int64) throws {
        try db.query(Self.insertPurchaseSQL, Self.values(e, at: at))
    }

    func updatePurchase(_ e: PurchaseEvent, at: Int64) throws {
        try db.query("""
            UPDATE app_store_purchases SET product_id = $3, expires_at = $4, revoked_at = $5, grace_until = $6,
                billing_retry = $7, auto_renew = $8, apple_status = $9, event_type = $10, event_subtype = $11,
                event_signed_date = $12, event_key = $13, source = $14, signed_transaction = $15, signed_renewal_info = $16,
                updated_at = $17
            WHERE original_transaction_id = $1 AND environment = $2
            """, Self.values(e, at: at))
    }

    func insertNotification(_ n: NotificationRecord, outcome: NotificationOutcome, at: Int64) throws {
        try db.query("""
            INSERT INTO app_store_notifications (notification_uuid, notification_type, subtype, original_transaction_id, signed_date,
                                                 received_at, outcome)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """, [.text(n.uuid), .text(n.type), .optionalText(n.subtype), .optionalText(n.originalTransactionId),
                  .timestamp(ms: n.signedDate), .timestamp(ms: at), .text(outcome.rawValue)])
    }

    func deleteNotifications(receivedBefore cutoff: Int64) throws {
        try db.query("DELETE FROM app_store_notifications WHERE received_at < $1", [.timestamp(ms: cutoff)])
    }

    func deleteUnregisteredPurchases(updatedBefore cutoff: Int64) throws {
        try db.query("""
            /* global: subscriptions of a purchase */
            DELETE FROM app_store_purchases p WHERE p.updated_at < $1 AND NOT EXISTS
                (SELECT 1 FROM subscriptions s WHERE s.original_transaction_id = p.original_transaction_id
                                                 AND s.environment = p.environment)
            """, [.timestamp(ms: cutoff)])
    }
}
#endif
