import Foundation
@testable import LedgerCore
@testable import LedgerStorageSQLite
import SQLiteKit
import XCTest

/// Version 5: subscriptions stored before it become their purchases' first events.
/// Version 10: purchases are keyed by (environment, original transaction id).
final class SubscriptionMigrationTests: XCTestCase {
    func testStoredUploadsBecomePurchases() throws {
        try withTemporaryDatabase("subscriptions") { path in
            let db = try SQLiteConnection(path: path)
            try Migrator.migrate(db, Schema.migrations.filter { $0.version < 5 })
            try db.execute("""
                INSERT INTO accounts VALUES ('a1', 'ann', 'Ann', 1);
                INSERT INTO households (id, name, currency, owner_account_id, created_at, modified_at, change_tag, incarnation, seq)
                    VALUES ('h1', 'Home', 'EUR', 'a1', 1, 1, 'v1', 1, 3), ('h2', 'Cabin', 'EUR', 'a1', 1, 1, 'v1', 1, 3);
                INSERT INTO subscriptions VALUES ('h1', 'jws-old', 'pro.yearly', '1000', 5000, 'Production', 100, 'a1');
                INSERT INTO subscriptions VALUES ('h2', 'jws-new', 'pro.yearly', '1000', 9000, 'Production', 200, 'a1');
                """)
            XCTAssertEqual(try Migrator.migrate(db, Schema.migrations.filter { $0.version <= 5 }), [5])
            XCTAssertEqual(try db.queryOne("SELECT count(*) FROM app_store_purchases")?.int(0), 1,
                           "one purchase, registered by two households")
            let storage = SQLiteLedgerTransaction(db)
            let purchase = try XCTUnwrap(storage.purchase(PurchaseKey(environment: "Production", originalTransactionId: "1000"))).event
            XCTAssertEqual(purchase.expiresAt, 9000, "the latest upload wins")
            XCTAssertEqual(purchase.source, "upload")
            XCTAssertEqual(purchase.signedTransaction, "jws-new")
            XCTAssertEqual(PurchaseState.derive(purchase, now: 8999).0, .active)
            XCTAssertEqual(PurchaseState.derive(purchase, now: 9000).0, .expired)
            XCTAssertEqual(try storage.households(subscribedTo: PurchaseKey(environment: "Production", originalTransactionId: "1000")), ["h1", "h2"])
            XCTAssertEqual(try storage.subscription(household: "h1")?.purchase.event, purchase)
            // Any notification is newer than a migrated upload.
            XCTAssertEqual(try db.queryOne("SELECT event_signed_date FROM app_store_purchases")?.int(0), 0)
            XCTAssertEqual(try db.queryOne("PRAGMA integrity_check")?.string(0), "ok")
        }
    }

    /// Every purchase keeps its row and its environment; a household whose purchase row a
    /// Sandbox event had taken over gets its upload back as its Production purchase.
    func testVersion10KeysPurchasesByEnvironmentAndKeepsTheRows() throws {
        try withTemporaryDatabase("purchase-key") { path in
            let db = try SQLiteConnection(path: path)
            try Migrator.migrate(db, Schema.migrations.filter { $0.version < 10 })
            try db.execute("""
                INSERT INTO accounts VALUES ('a1', 'ann', 'Ann', 1);
                INSERT INTO households (id, name, currency, owner_account_id, created_at, modified_at, change_tag, incarnation, seq)
                    VALUES ('h1', 'Home', 'EUR', 'a1', 1, 1, 'v1', 1, 3), ('h2', 'Cabin', 'EUR', 'a1', 1, 1, 'v1', 1, 3);
                INSERT INTO subscriptions VALUES ('h1', 'jws-1', 'pro.yearly', '1000', 5000, 'Production', 100, 'a1');
                INSERT INTO subscriptions VALUES ('h2', 'jws-2', 'pro.yearly', '2000', 9000, 'Production', 200, 'a1');
                INSERT INTO app_store_purchases (\(StoredPurchase.columns)) VALUES
                    ('1000', 'Production', 'pro.yearly', 7000, NULL, NULL, 0, 1, 1, 'DID_RENEW', NULL, 300, 'n1', 'notification',
                     'jws-renewed', 'renewal', 400),
                    ('2000', 'Sandbox', 'pro.yearly', 9000, 450, NULL, 0, 1, 2, 'REFUND', NULL, 500, 'n2', 'notification',
                     'jws-sandbox', NULL, 600),
                    ('3000', 'Sandbox', 'pro.monthly', NULL, NULL, NULL, 1, 0, 3, 'DID_FAIL_TO_RENEW', 'GRACE_PERIOD', 700, 'n3',
                     'notification', 'jws-3', NULL, 800);
                """)
            let storage = SQLiteLedgerTransaction(db)
            func purchases() throws -> [StoredPurchase] {
                try db.query("SELECT original_transaction_id, environment FROM app_store_purchases ORDER BY 1, 2").map {
                    try XCTUnwrap(storage.purchase(PurchaseKey(environment: $0.string(1), originalTransactionId: $0.string(0))))
                }
            }
            let before = try purchases()
            XCTAssertEqual(before.count, 3)
            XCTAssertEqual(try Migrator.migrate(db, Schema.migrations), Schema.migrations.map(\.version).filter { $0 >= 10 })

            let after = try purchases()
            XCTAssertEqual(after.count, 4)
            for p in before { XCTAssertTrue(after.contains(p), "\(p.event.originalTransactionId) is kept as it was") }
            XCTAssertEqual(try storage.subscription(household: "h1")?.purchase, before[0], "its notification stays applied")
            let restored = try XCTUnwrap(storage.subscription(household: "h2")).purchase
            XCTAssertEqual(restored.event.environment, "Production")
            XCTAssertEqual(restored.event.signedTransaction, "jws-2")
            XCTAssertEqual(restored.event.signedDate, 0, "any notification is newer")
            XCTAssertEqual(PurchaseState.derive(restored.event, now: 8999).0, .active, "the Sandbox refund is not the household's")
            XCTAssertEqual(try storage.households(subscribedTo: PurchaseKey(environment: "Sandbox", originalTransactionId: "2000")), [])
            XCTAssertEqual(try storage.households(subscribedTo: PurchaseKey(environment: "Production", originalTransactionId: "2000")), ["h2"])
            // One id, two environments: two rows.
            try storage.insertPurchase(PurchaseEvent(originalTransactionId: "3000", environment: "Production", productId: "pro.yearly",
                                                     expiresAt: nil, revokedAt: nil, graceUntil: nil, billingRetry: false,
                                                     autoRenew: nil, appleStatus: nil, type: nil, subtype: nil, signedDate: 1,
                                                     key: "", source: "upload", signedTransaction: "jws-p", signedRenewalInfo: nil), at: 1)
            XCTAssertEqual(try db.queryOne("SELECT count(*) FROM app_store_purchases WHERE original_transaction_id = '3000'")?.int(0), 2)
            XCTAssertEqual(try db.queryOne("PRAGMA integrity_check")?.string(0), "ok")
        }
    }
}
