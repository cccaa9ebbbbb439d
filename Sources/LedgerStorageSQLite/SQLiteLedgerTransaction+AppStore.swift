import LedgerCore
import LedgerModel
import SQLiteKit

/// The App Store subscription primitives over schema version 5 (`app_store_purchases`,
/// `app_store_notifications`, `subscriptions`), purchases keyed by (environment, original
/// transaction id) since version 10. One writer: a purchase read in a write is
/// current without locking.
extension SQLiteLedgerTransaction {
    /// The event's values in `StoredPurchase.columns` order, stored at `at`.
    private static func values(_ e: PurchaseEvent, at: Int64) -> [SQLiteValue] {
        [.text(e.originalTransactionId), .text(e.environment), .text(e.productId), .optionalInteger(e.expiresAt),
         .optionalInteger(e.revokedAt), .optionalInteger(e.graceUntil), .bool(e.billingRetry),
         e.autoRenew.map { .bool($0) } ?? .null, e.appleStatus.map { .int($0) } ?? .null, .optionalText(e.type),
         .optionalText(e.subtype), .integer(e.signedDate), .text(e.key), .text(e.source), .text(e.signedTransaction),
         .optionalText(e.signedRenewalInfo), .integer(at)]
    }

    // MARK: reading

    private static let subscriptionQuery = """
        SELECT s.granted_by, s.verified_at, \(StoredPurchase.columns(of: "p")) FROM subscriptions s
        JOIN app_store_purchases p ON p.environment = s.environment AND p.original_transaction_id = s.original_transaction_id
        WHERE s.household_id = ?
        """

    func subscription(household: String) throws -> SubscriptionRecord? {
        try db.queryOne(Self.subscriptionQuery, [.text(household)]).map { SubscriptionRecord(row: $0) }
    }

    private static let purchaseSQL =
        "SELECT \(StoredPurchase.columns) FROM app_store_purchases WHERE environment = ? AND original_transaction_id = ?"

    func purchase(_ key: PurchaseKey) throws -> StoredPurchase? {
        try db.queryOne(Self.purchaseSQL, [.text(key.environment), .text(key.originalTransactionId)]).map { StoredPurchase(row: $0) }
    }

    func households(subscribedTo key: PurchaseKey) throws -> [String] {
        try db.query("""
            SELECT household_id FROM subscriptions WHERE environment = ? AND original_transaction_id = ? ORDER BY household_id
            """, [.text(key.environment), .text(key.originalTransactionId)]).map { $0.string(0) }
    }

    func notificationSeen(uuid: String) throws -> Bool {
        try db.queryOne("SELECT 1 FROM app_store_notifications WHERE notification_uuid = ?", [.text(uuid)]) != nil
    }

    // MARK: writing

    func setSubscription(household: String, upload e: PurchaseEvent, grantedBy: String, at: Int64) throws {
        try db.run("""
            INSERT INTO subscriptions (household_id, signed_transaction, product_id, original_transaction_id, expires_at, environment,
                                       verified_at, granted_by)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT(household_id) DO UPDATE SET signed_transaction = excluded.signed_transaction, product_id = excluded.product_id,
                original_transaction_id = excluded.original_transaction_id, expires_at = excluded.expires_at,
                environment = excluded.environment, verified_at = excluded.verified_at, granted_by = excluded.granted_by
            """, [.text(household), .text(e.signedTransaction), .text(e.productId), .text(e.originalTransactionId),
                  .optionalInteger(e.expiresAt), .text(e.environment), .integer(at), .text(grantedBy)])
    }

    func deleteSubscription(household: String) throws -> Bool {
        try db.run("DELETE FROM subscriptions WHERE household_id = ?", [.text(household)])
        return connection.changes > 0
    }

    private static let insertPurchaseSQL =
        "INSERT INTO app_store_purchases (\(StoredPurchase.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

    func insertPurchase(_ e: PurchaseEvent, at: Int64) throws {
        try db.run(Self.insertPurchaseSQL, Self.values(e, at: at))
    }

    func updatePurchase(_ e: PurchaseEvent, at: Int64) throws {
        try db.run("""
            UPDATE app_store_purchases SET product_id = ?3, expires_at = ?4, revoked_at = ?5, grace_until = ?6,
                billing_retry = ?7, auto_renew = ?8, apple_status = ?9, event_type = ?10, event_subtype = ?11,
                event_signed_date = ?12, event_key = ?13, source = ?14, signed_transaction = ?15, signed_renewal_info = ?16,
                updated_at = ?17
            WHERE original_transaction_id = ?1 AND environment = ?2
            """, Self.values(e, at: at))
    }

    func insertNotification(_ n: NotificationRecord, outcome: NotificationOutcome, at: Int64) throws {
        try db.run("""
            INSERT INTO app_store_notifications (notification_uuid, notification_type, subtype, original_transaction_id, signed_date,
                                                 received_at, outcome)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [.text(n.uuid), .text(n.type), .optionalText(n.subtype), .optionalText(n.originalTransactionId),
                  .integer(n.signedDate), .integer(at), .text(outcome.rawValue)])
    }

    func deleteNotifications(receivedBefore cutoff: Int64) throws {
        try db.run("DELETE FROM app_store_notifications WHERE received_at < ?", [.integer(cutoff)])
    }

    func deleteUnregisteredPurchases(updatedBefore cutoff: Int64) throws {
        try db.run("""
            DELETE FROM app_store_purchases WHERE updated_at < ? AND NOT EXISTS
                (SELECT 1 FROM subscriptions s WHERE s.original_transaction_id = app_store_purchases.original_transaction_id
                                                 AND s.environment = app_store_purchases.environment)
            """, [.integer(cutoff)])
    }
}
