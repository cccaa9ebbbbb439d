import Foundation

/// The App Store tables' columns, which both backends' schemas name alike (SQLite's
/// version 5, PostgreSQL's migration 2); each backend reads them in this order.
package enum AppStoreTables {
    /// `app_store_purchases`: the purchase's newest event, then when it was stored.
    package static let purchaseColumns = """
        original_transaction_id, environment, product_id, expires_at, revoked_at, grace_until, billing_retry, auto_renew, \
        apple_status, event_type, event_subtype, event_signed_date, event_key, source, signed_transaction, signed_renewal_info, \
        updated_at
        """

    /// `purchaseColumns` of the table aliased `alias`.
    package static func purchaseColumns(of alias: String) -> String {
        purchaseColumns.split(separator: ",").map { alias + "." + $0.trimmingCharacters(in: .whitespaces) }.joined(separator: ", ")
    }
}
