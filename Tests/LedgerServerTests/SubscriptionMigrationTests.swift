import Foundation
@testable import LedgerServer
import SQLiteKit
import XCTest

/// Version 5: subscriptions stored before it become their purchases' first events.
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
            let purchase = try XCTUnwrap(storage.purchase(originalTransactionId: "1000")).event
            XCTAssertEqual(purchase.expiresAt, 9000, "the latest upload wins")
            XCTAssertEqual(purchase.source, "upload")
            XCTAssertEqual(purchase.signedTransaction, "jws-new")
            XCTAssertEqual(PurchaseState.derive(purchase, now: 8999).0, .active)
            XCTAssertEqual(PurchaseState.derive(purchase, now: 9000).0, .expired)
            XCTAssertEqual(try storage.households(subscribedTo: "1000"), ["h1", "h2"])
            XCTAssertEqual(try storage.subscription(household: "h1")?.purchase.event, purchase)
            // Any notification is newer than a migrated upload.
            XCTAssertEqual(try db.queryOne("SELECT event_signed_date FROM app_store_purchases")?.int(0), 0)
            XCTAssertEqual(try db.queryOne("PRAGMA integrity_check")?.string(0), "ok")
        }
    }
}
