import Foundation
import LedgerModel
#if Postgres
@testable import LedgerStoragePostgres
import PostgresKit
#endif
import SQLiteKit
import Synchronization
import XCTest
@testable import LedgerCore
@testable import LedgerServer

/// The App Store part of the storage seam's contract: every conformer orders a purchase's
/// events the same way, remembers notifications, keeps unregistered purchases for the
/// retention and applies them at registration.
extension LedgerStorageContractTests {
    static let day: Int64 = 86_400_000

    static func event(_ original: String, signedDate: Int64, key: String, expires: Int64?, type: String? = nil,
                      revoked: Int64? = nil, status: Int? = nil, environment: String = "Sandbox",
                      product: String = "pro.yearly") -> PurchaseEvent {
        PurchaseEvent(originalTransactionId: original, environment: environment, productId: product, expiresAt: expires,
                      revokedAt: revoked, graceUntil: nil, billingRetry: false, autoRenew: type == nil ? nil : true,
                      appleStatus: status, type: type, subtype: nil, signedDate: signedDate, key: key,
                      source: type == nil ? "upload" : "notification", signedTransaction: "jws-\(signedDate)-\(key)",
                      signedRenewalInfo: type == nil ? nil : "renewal-\(signedDate)")
    }

    /// The purchase `original` of the environment the events here are in (`Sandbox`).
    static func key(_ original: String, environment: String = "Sandbox") -> PurchaseKey {
        PurchaseKey(environment: environment, originalTransactionId: original)
    }

    static func notification(_ e: PurchaseEvent) -> NotificationRecord {
        NotificationRecord(uuid: e.key, type: e.type ?? "TEST", subtype: nil, originalTransactionId: e.originalTransactionId,
                           signedDate: e.signedDate)
    }

    func record(_ e: PurchaseEvent, at: Int64) throws -> NotificationOutcome {
        let n = Self.notification(e)
        return try write { try $0.recordNotification(n, event: e, now: at) }
    }

    func headSeq(_ h: String) throws -> Int64 {
        try XCTUnwrap(storage.read { try $0.head(household: h) }).seq
    }

    func checkAppStoreEventsOrderAndRegistration() throws {
        let now = self.now, day = Self.day
        let (owner, h, _) = try household()
        let original = "2000000000000001"

        // Before any registration: kept as unmatched; a replay is a duplicate; an older event is stale.
        let subscribed = Self.event(original, signedDate: now - 5000, key: "b-uuid", expires: now + day, type: "SUBSCRIBED", status: 1)
        XCTAssertEqual(try record(subscribed, at: now), .unmatched)
        XCTAssertEqual(try record(subscribed, at: now + 1), .duplicate)
        XCTAssertTrue(try storage.read { try $0.notificationSeen(uuid: "b-uuid") })
        let refund = Self.event(original, signedDate: now - 4000, key: "c-uuid", expires: now + day, type: "REFUND",
                                revoked: now - 4500, status: 2)
        XCTAssertEqual(try record(refund, at: now + 2), .unmatched)
        XCTAssertEqual(try record(Self.event(original, signedDate: now - 6000, key: "a-uuid", expires: now + 9 * day,
                                             type: "DID_RENEW", status: 1), at: now + 3), .stale)
        // The same signed date: the key decides.
        XCTAssertEqual(try record(Self.event(original, signedDate: now - 4000, key: "b2-uuid", expires: now + 9 * day,
                                             type: "DID_RENEW", status: 1), at: now + 3), .stale)
        XCTAssertEqual(try storage.read { try $0.purchase(Self.key(original)) }, StoredPurchase(event: refund, updatedAt: now + 2))
        XCTAssertEqual(try storage.read { try $0.households(subscribedTo: Self.key(original)) }, [])

        // Registering with the purchase-time upload: the kept refund is newer and stays.
        let (dad, _) = try write { try $0.createAccount(handle: "dad" + String(UUID().uuidString.prefix(6)).lowercased(),
                                                        displayName: "Dad", deviceName: "phone", now: now) }
        let upload = Self.event(original, signedDate: now - 10_000, key: "", expires: now + day)
        expect(.householdNotFound) { try $0.registerSubscription(household: h, owner: dad.id, upload: upload, now: now) }
        XCTAssertNil(try storage.read { try $0.subscription(household: h) }, "a refusal leaves nothing behind")
        let before = try headSeq(h)
        let registered = try write { try $0.registerSubscription(household: h, owner: owner, upload: upload, now: now + 10) }
        XCTAssertEqual(registered, SubscriptionRecord(grantedBy: owner, verifiedAt: now + 10, purchase: StoredPurchase(event: refund, updatedAt: now + 2)))
        XCTAssertEqual(PurchaseState.derive(registered.purchase.event, now: now + 10).0, .refunded)
        XCTAssertEqual(try storage.read { try $0.subscription(household: h) }, registered)
        XCTAssertEqual(try storage.read { try $0.households(subscribedTo: Self.key(original)) }, [h])
        XCTAssertGreaterThan(try headSeq(h), before, "registering moves the household's feed")

        // From now on the household follows the purchase: applied, and its feed moves.
        let reversed = Self.event(original, signedDate: now - 3000, key: "d-uuid", expires: now + day, type: "REFUND_REVERSED", status: 1)
        let beforeReversal = try headSeq(h)
        XCTAssertEqual(try record(reversed, at: now + 20), .applied)
        XCTAssertGreaterThan(try headSeq(h), beforeReversal)
        let current = try XCTUnwrap(storage.read { try $0.subscription(household: h) })
        XCTAssertEqual(current.purchase, StoredPurchase(event: reversed, updatedAt: now + 20))
        let state = PurchaseState.derive(current.purchase.event, now: now + 20)
        XCTAssertEqual(state.0, .active)
        XCTAssertEqual(state.endsAt, now + day)
        // A newer upload is an event like any other; an upload signed in the same millisecond
        // as the stored notification is older than it.
        let sameMs = Self.event(original, signedDate: now - 3000, key: "", expires: now + 5 * day)
        XCTAssertEqual(try write { try $0.registerSubscription(household: h, owner: owner, upload: sameMs, now: now + 30) }.purchase.event, reversed)
        let newer = Self.event(original, signedDate: now - 2000, key: "", expires: now + 5 * day)
        let renewed = try write { try $0.registerSubscription(household: h, owner: owner, upload: newer, now: now + 40) }
        XCTAssertEqual(renewed.purchase, StoredPurchase(event: newer, updatedAt: now + 40))
        XCTAssertEqual(renewed.verifiedAt, now + 40)

        // A notification of a type that changes nothing is remembered and ignored.
        let test = NotificationRecord(uuid: "test-uuid", type: "TEST", subtype: nil, originalTransactionId: nil, signedDate: now)
        XCTAssertEqual(try write { try $0.recordNotification(test, event: nil, now: now + 50) }, .ignored)
        XCTAssertEqual(try write { try $0.recordNotification(test, event: nil, now: now + 51) }, .duplicate)

        // Removing: the feed moves once; the purchase stays (another household may register it).
        let beforeRemoval = try headSeq(h)
        try write { try $0.removeSubscription(household: h) }
        XCTAssertNil(try storage.read { try $0.subscription(household: h) })
        XCTAssertEqual(try headSeq(h), beforeRemoval + 1)
        try write { try $0.removeSubscription(household: h) }
        XCTAssertEqual(try headSeq(h), beforeRemoval + 1, "nothing to remove: the feed stays")
        XCTAssertNotNil(try storage.read { try $0.purchase(Self.key(original)) })
        XCTAssertEqual(try record(Self.event(original, signedDate: now, key: "e-uuid", expires: now + day, type: "DID_RENEW", status: 1),
                              at: now + 60), .unmatched)

        // Two households of one owner registering one purchase both follow it.
        let h2 = UUID().lowercased
        _ = try write { try $0.createHousehold(id: h2, name: "Cabin", currency: "EUR", owner: owner, ifAbsentOnly: true, now: now) }
        _ = try write { try $0.registerSubscription(household: h, owner: owner, upload: upload, now: now + 70) }
        _ = try write { try $0.registerSubscription(household: h2, owner: owner, upload: upload, now: now + 70) }
        XCTAssertEqual(try storage.read { try $0.households(subscribedTo: Self.key(original)) }, [h, h2].sorted())
        let heads = (try headSeq(h), try headSeq(h2))
        XCTAssertEqual(try record(Self.event(original, signedDate: now + 1, key: "f-uuid", expires: now + day, type: "EXPIRED", status: 2),
                              at: now + 80), .applied)
        XCTAssertEqual(try headSeq(h), heads.0 + 1)
        XCTAssertEqual(try headSeq(h2), heads.1 + 1)

        // Deleting the household deletes its subscription.
        try write { try $0.deleteHousehold(id: h2, account: owner) }
        XCTAssertEqual(try storage.read { try $0.households(subscribedTo: Self.key(original)) }, [h])
    }

    /// One original transaction id in two environments is two purchases: an event of one
    /// never reads, changes, registers or keeps the other.
    func checkPurchasesOfTwoEnvironmentsAreApart() throws {
        let now = self.now, day = Self.day, retention = NotificationRecord.retentionMs
        let (owner, h, _) = try household()
        let original = "2100000000000001"
        let production = Self.key(original, environment: "Production"), sandbox = Self.key(original)
        let upload = Self.event(original, signedDate: now - 10_000, key: "", expires: now + 30 * day, environment: "Production")
        let registered = try write { try $0.registerSubscription(household: h, owner: owner, upload: upload, now: now) }
        XCTAssertEqual(registered.purchase, StoredPurchase(event: upload, updatedAt: now))

        // A newer Sandbox refund of the same id: another purchase, which no household registered.
        let before = try headSeq(h)
        let refund = Self.event(original, signedDate: now - 1000, key: "sandbox-refund", expires: now + 30 * day, type: "REFUND",
                                revoked: now - 2000, status: 2)
        XCTAssertEqual(try record(refund, at: now + 1), .unmatched)
        XCTAssertEqual(try headSeq(h), before, "the Production household's feed does not move")
        XCTAssertEqual(try storage.read { try $0.subscription(household: h) }, registered)
        XCTAssertEqual(try storage.read { try $0.purchase(production) }, StoredPurchase(event: upload, updatedAt: now))
        XCTAssertEqual(try storage.read { try $0.purchase(sandbox) }, StoredPurchase(event: refund, updatedAt: now + 1))
        XCTAssertEqual(try storage.read { try $0.households(subscribedTo: production) }, [h])
        XCTAssertEqual(try storage.read { try $0.households(subscribedTo: sandbox) }, [])

        // Each purchase orders its own events: an older Production event is not stale against
        // the Sandbox one, and a Production renewal leaves the Sandbox refund as it is.
        let renewal = Self.event(original, signedDate: now - 5000, key: "production-renewal", expires: now + 60 * day,
                                 type: "DID_RENEW", status: 1, environment: "Production")
        XCTAssertEqual(try record(renewal, at: now + 2), .applied)
        XCTAssertGreaterThan(try headSeq(h), before)
        XCTAssertEqual(try storage.read { try $0.subscription(household: h) }?.purchase.event, renewal)
        XCTAssertEqual(try storage.read { try $0.purchase(sandbox) }?.event, refund)
        XCTAssertEqual(try record(Self.event(original, signedDate: now - 3000, key: "older-sandbox", expires: now + day,
                                             type: "DID_RENEW", status: 1), at: now + 3), .stale)

        // A Sandbox upload of the id registers the Sandbox purchase, with its own newest state.
        let h2 = UUID().lowercased
        _ = try write { try $0.createHousehold(id: h2, name: "Test", currency: "EUR", owner: owner, ifAbsentOnly: true, now: now) }
        let sandboxUpload = Self.event(original, signedDate: now - 9000, key: "", expires: now + 30 * day)
        XCTAssertEqual(try write { try $0.registerSubscription(household: h2, owner: owner, upload: sandboxUpload, now: now + 4) }.purchase,
                       StoredPurchase(event: refund, updatedAt: now + 1))
        XCTAssertEqual(try storage.read { try $0.households(subscribedTo: sandbox) }, [h2])
        XCTAssertEqual(try storage.read { try $0.subscription(household: h) }?.purchase.event, renewal)

        // Retention is per purchase: an unregistered Sandbox purchase is forgotten although
        // a Production purchase of the same id is registered, and the reverse.
        try write { try $0.removeSubscription(household: h2) }
        let old = now + 5 - retention - 1
        let other = "2100000000000002"
        _ = try write { try $0.registerSubscription(household: h2, owner: owner,
                                                    upload: Self.event(other, signedDate: old - 10, key: "", expires: nil), now: old) }
        XCTAssertEqual(try record(Self.event(other, signedDate: old - 5, key: "old-production", expires: nil, type: "DID_RENEW",
                                             status: 1, environment: "Production"), at: old), .unmatched)
        try write { try $0.updatePurchase(refund, at: old) }
        let test = NotificationRecord(uuid: "env-test", type: "TEST", subtype: nil, originalTransactionId: nil, signedDate: now)
        XCTAssertEqual(try write { try $0.recordNotification(test, event: nil, now: now + 5) }, .ignored)
        XCTAssertNil(try storage.read { try $0.purchase(sandbox) })
        XCTAssertNotNil(try storage.read { try $0.purchase(production) })
        XCTAssertNil(try storage.read { try $0.purchase(Self.key(other, environment: "Production")) })
        XCTAssertNotNil(try storage.read { try $0.purchase(Self.key(other)) })
    }

    /// Notifications, and purchases no household registered, are kept 90 days; registered
    /// purchases for as long as they are registered.
    func checkAppStoreRetention() throws {
        let now = self.now, day = Self.day, retention = NotificationRecord.retentionMs
        let (owner, h, _) = try household()
        let old = now - retention - 1
        let forgotten = Self.event("3000000000000001", signedDate: old - 10, key: "old-unmatched", expires: now + day,
                                   type: "SUBSCRIBED", status: 1)
        XCTAssertEqual(try record(forgotten, at: old), .unmatched)
        let kept = Self.event("3000000000000002", signedDate: now - retention + 10, key: "recent-unmatched", expires: now + day,
                              type: "SUBSCRIBED", status: 1)
        XCTAssertEqual(try record(kept, at: now - retention), .unmatched)
        _ = try write { try $0.registerSubscription(household: h, owner: owner,
                                                    upload: Self.event("3000000000000003", signedDate: old - 20, key: "", expires: nil),
                                                    now: old) }
        let registeredOld = Self.event("3000000000000003", signedDate: old - 5, key: "old-applied", expires: nil, type: "DID_RENEW", status: 1)
        XCTAssertEqual(try record(registeredOld, at: old), .applied)

        // Nothing is forgotten until a notification arrives.
        XCTAssertTrue(try storage.read { try $0.notificationSeen(uuid: "old-unmatched") })
        let test = NotificationRecord(uuid: "now", type: "TEST", subtype: nil, originalTransactionId: nil, signedDate: now)
        XCTAssertEqual(try write { try $0.recordNotification(test, event: nil, now: now) }, .ignored)

        XCTAssertFalse(try storage.read { try $0.notificationSeen(uuid: "old-unmatched") })
        XCTAssertFalse(try storage.read { try $0.notificationSeen(uuid: "old-applied") })
        XCTAssertTrue(try storage.read { try $0.notificationSeen(uuid: "recent-unmatched") })
        XCTAssertNil(try storage.read { try $0.purchase(Self.key(forgotten.originalTransactionId)) })
        XCTAssertEqual(try storage.read { try $0.purchase(Self.key(kept.originalTransactionId)) }?.event, kept)
        XCTAssertEqual(try storage.read { try $0.subscription(household: h) }?.purchase.event, registeredOld,
                       "a registered purchase is kept however old")
        // The forgotten purchase is as new: an owner registering it gets the upload's state.
        let upload = Self.event(forgotten.originalTransactionId, signedDate: old - 100, key: "", expires: now + day)
        XCTAssertEqual(try write { try $0.registerSubscription(household: h, owner: owner, upload: upload, now: now) }.purchase.event, upload)
    }

    /// Events of one purchase delivered at once, in any order, from many connections: the
    /// newest is stored, each notification counts once, and nothing fails.
    func checkConcurrentEventsOfOnePurchase() throws {
        let now = self.now, day = Self.day
        let original = "4000000000000001"
        let events = (1...16).map { i in
            Self.event(original, signedDate: now + Int64(i) * 1000, key: "uuid-\(i)", expires: now + Int64(i) * day,
                       type: "DID_RENEW", status: 1)
        }.shuffled()
        let outcomes = Mutex<[NotificationOutcome]>([])
        let failures = Mutex<[String]>([])
        let storage = self.storage!
        // Each event twice (a retried delivery): one of the two is a duplicate.
        DispatchQueue.concurrentPerform(iterations: 32) { i in
            let e = events[i % 16], n = Self.notification(e)
            do {
                let o = try storage.writeAndWait { try $0.recordNotification(n, event: e, now: now) }
                outcomes.withLock { $0.append(o) }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        let all = outcomes.withLock { $0 }
        XCTAssertEqual(all.filter { $0 == .duplicate }.count, 16)
        XCTAssertEqual(all.filter { $0 == .unmatched || $0 == .stale }.count, 16)
        let newest = events.max { $0.signedDate < $1.signedDate }!
        XCTAssertEqual(try self.storage.read { try $0.purchase(Self.key(original)) }?.event, newest)
    }

    /// A purchase read inside a write stays locked until that write commits: another
    /// process's event of the same purchase waits, then compares against what committed.
    func checkAPurchaseReadInAWriteIsLockedUntilItCommits() throws {
        let now = self.now, day = Self.day
        let original = "5000000000000001"
        XCTAssertEqual(try record(Self.event(original, signedDate: now, key: "u1", expires: now + day, type: "SUBSCRIBED", status: 1),
                                  at: now), .unmatched)
        let older = Self.event(original, signedDate: now + 1000, key: "u2", expires: now + 2 * day, type: "DID_RENEW", status: 1)
        let newer = Self.event(original, signedDate: now + 2000, key: "u3", expires: now + 3 * day, type: "DID_RENEW", status: 1)
        let storage = self.storage!
        let read = DispatchSemaphore(value: 0), proceed = DispatchSemaphore(value: 0), secondDone = DispatchSemaphore(value: 0)
        let paused = Mutex(false)
        let group = DispatchGroup()
        let firstFailure = Mutex<String?>(nil)
        DispatchQueue.global().async(group: group) {
            do {
                try storage.writeAndWait { w in
                    let stored = try w.purchase(Self.key(original))
                    let pausedBefore = paused.withLock { p in
                        defer { p = true }
                        return p
                    }
                    if !pausedBefore {
                        read.signal()
                        proceed.wait()
                    }
                    if let stored, older.isNewer(than: stored.event) { try w.updatePurchase(older, at: now + 1) }
                }
            } catch {
                firstFailure.withLock { $0 = "\(error)" }
            }
        }
        read.wait()
        let second = Mutex<NotificationOutcome?>(nil)
        DispatchQueue.global().async(group: group) {
            let o = try? storage.writeAndWait { try $0.recordNotification(Self.notification(newer), event: newer, now: now + 2) }
            second.withLock { $0 = o }
            secondDone.signal()
        }
        XCTAssertEqual(secondDone.wait(timeout: .now() + 0.5), .timedOut, "the second write waits for the first")
        proceed.signal()
        group.wait()
        XCTAssertNil(firstFailure.withLock { $0 })
        XCTAssertEqual(second.withLock { $0 }, .unmatched)
        XCTAssertEqual(try self.storage.read { try $0.purchase(Self.key(original)) }?.event, newer,
                       "the newer event, committed second, is stored")
    }
}

extension SQLiteLedgerStorageTests {
    func testAppStoreEventsOrderAndRegistration() throws { try checkAppStoreEventsOrderAndRegistration() }
    func testAppStoreRetention() throws { try checkAppStoreRetention() }
    func testPurchasesOfTwoEnvironmentsAreApart() throws { try checkPurchasesOfTwoEnvironmentsAreApart() }
    func testConcurrentEventsOfOnePurchase() throws { try checkConcurrentEventsOfOnePurchase() }
    func testAPurchaseReadInAWriteIsLockedUntilItCommits() throws { try checkAPurchaseReadInAWriteIsLockedUntilItCommits() }
}

#if Postgres
extension PostgresLedgerStorageTests {
    func testAppStoreEventsOrderAndRegistration() throws { try checkAppStoreEventsOrderAndRegistration() }
    func testAppStoreRetention() throws { try checkAppStoreRetention() }
    func testPurchasesOfTwoEnvironmentsAreApart() throws { try checkPurchasesOfTwoEnvironmentsAreApart() }
    func testConcurrentEventsOfOnePurchase() throws { try checkConcurrentEventsOfOnePurchase() }
    func testAPurchaseReadInAWriteIsLockedUntilItCommits() throws { try checkAPurchaseReadInAWriteIsLockedUntilItCommits() }

    /// Another process may delete a household between a notification reading who registered
    /// the purchase and touching each household: the notification is still taken (never a
    /// 404 to the App Store). The subscription row of a household that is gone stands for
    /// that moment.
    func testANotificationSkipsAHouseholdDeletedMeanwhile() throws {
        let now = self.now, day = Self.day
        let (owner, h, _) = try household()
        let original = "7000000000000001"
        _ = try write { try $0.registerSubscription(household: h, owner: owner,
                                                    upload: Self.event(original, signedDate: now, key: "", expires: now + day), now: now) }
        let gone = UUID().lowercased
        try (storage as! PostgresLedgerStorage).pool.with { db in
            try db.execute("ALTER TABLE subscriptions DROP CONSTRAINT subscriptions_household_id_fkey")
            try db.query("""
                INSERT INTO subscriptions SELECT $1, signed_transaction, product_id, original_transaction_id, expires_at, environment,
                    verified_at, granted_by FROM subscriptions WHERE household_id = $2
                """, [.uuid(gone), .uuid(h)])
        }
        XCTAssertEqual(try storage.read { try $0.households(subscribedTo: Self.key(original)) }, [h, gone].sorted())
        let before = try headSeq(h)
        let renewed = Self.event(original, signedDate: now + 1000, key: "n-uuid", expires: now + 2 * day, type: "DID_RENEW", status: 1)
        XCTAssertEqual(try record(renewed, at: now + 1), .applied)
        XCTAssertEqual(try headSeq(h), before + 1)
        XCTAssertEqual(try storage.read { try $0.subscription(household: h) }?.purchase.event, renewed)
    }
}
#endif

/// How the App Store endpoints' storage outcomes are answered.
final class AppStoreStorageErrorTests: XCTestCase {
    func testNoSubscriptionIs404() {
        let e = LedgerStorageError.noSubscription.apiError
        XCTAssertEqual(e.status, 404)
        XCTAssertEqual(e.code, "no_subscription")
    }

    /// A notification that could not be stored is 503 with Retry-After, so the App Store
    /// sends it again; never a 5xx it would take as final, never a 507.
    func testANotificationThatWasNotStoredIs503WithRetryAfter() {
        struct Broken: Error {}
        for error: any Error in [Broken(), LedgerStorageError.outOfSpace, LedgerStorageError.busy, APIError.internal()] {
            let (answer, unexpected) = LedgerStorageError.notificationFailure(error)
            XCTAssertEqual(answer.status, 503, "\(error)")
            XCTAssertEqual(answer.code, "service_unavailable", "\(error)")
            XCTAssertEqual(answer.headers["Retry-After"], "60", "\(error)")
            XCTAssertTrue(unexpected, "\(error)")
        }
        // The database unreachable, the server shutting down: their own 503 and Retry-After.
        for unknown in [false, true] {
            let (answer, unexpected) = LedgerStorageError.notificationFailure(LedgerStorageError.unavailable(commitOutcomeUnknown: unknown))
            XCTAssertEqual(answer.status, 503)
            XCTAssertEqual(answer.headers["Retry-After"], "1")
            XCTAssertFalse(unexpected)
        }
        let shutdown = LedgerStorageError.notificationFailure(LedgerStorageError.shuttingDown)
        XCTAssertEqual(shutdown.answer.detail, "The server is shutting down.")
        XCTAssertEqual(shutdown.answer.headers["Retry-After"], "1")
        XCTAssertFalse(shutdown.unexpected)
    }
}

#if Postgres
/// PostgreSQL's migration 2: subscriptions stored under migration 1 become their purchases'
/// first events, in native types.
final class PostgresAppStoreMigrationTests: XCTestCase {
    func testStoredUploadsBecomePurchasesInNativeTypes() throws {
        guard let url = ProcessInfo.processInfo.environment["KIDLEDGER_TEST_DATABASE_URL"], !url.isEmpty else {
            throw XCTSkip("KIDLEDGER_TEST_DATABASE_URL is not set")
        }
        let schema = "as_" + String(UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(20))
        let admin = try PGConnection(url: url)
        try admin.execute("CREATE SCHEMA \(schema)")
        defer { try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
        let db = try PGConnection(url: url, setup: ["SET search_path TO \(schema)"])
        XCTAssertEqual(try PGMigrator.migrate(db, PostgresSchema.migrations.filter { $0.version < 2 }), [1])
        let (a, h1, h2) = (UUID().lowercased, UUID().lowercased, UUID().lowercased)
        try db.execute("""
            INSERT INTO accounts VALUES ('\(a)', 'ann', 'Ann', now());
            INSERT INTO households (id, name, currency, owner_account_id, created_at, modified_at, change_tag, incarnation, seq)
                VALUES ('\(h1)', 'Home', 'EUR', '\(a)', now(), now(), 'v1', 1, 3), ('\(h2)', 'Cabin', 'EUR', '\(a)', now(), now(), 'v1', 1, 3);
            INSERT INTO subscriptions VALUES ('\(h1)', 'jws-old', 'pro.yearly', '1000', to_timestamp(5), 'Production', to_timestamp(0.1), '\(a)');
            INSERT INTO subscriptions VALUES ('\(h2)', 'jws-new', 'pro.yearly', '1000', to_timestamp(9), 'Production', to_timestamp(0.2), '\(a)');
            """)
        XCTAssertEqual(try PGMigrator.migrate(db, PostgresSchema.migrations).first, 2)

        let types = try db.query("""
            SELECT column_name, data_type FROM information_schema.columns
            WHERE table_schema = $1 AND table_name IN ('app_store_purchases', 'app_store_notifications')
            """, [.text(schema)]).rows.reduce(into: [String: String]()) { $0[$1.string(0)] = $1.string(1) }
        XCTAssertEqual(types["expires_at"], "timestamp with time zone")
        XCTAssertEqual(types["event_signed_date"], "timestamp with time zone")
        XCTAssertEqual(types["received_at"], "timestamp with time zone")
        XCTAssertEqual(types["billing_retry"], "boolean")
        XCTAssertEqual(types["auto_renew"], "boolean")
        XCTAssertEqual(types["apple_status"], "integer")

        let storage = PostgresLedgerTransaction(db, writing: false)
        let purchase = try XCTUnwrap(storage.purchase(PurchaseKey(environment: "Production", originalTransactionId: "1000")))
        XCTAssertEqual(try db.queryOne("SELECT count(*) FROM app_store_purchases")?.int(0), 1, "one purchase, registered by two households")
        XCTAssertEqual(purchase.event.expiresAt, 9000, "the latest upload wins")
        XCTAssertEqual(purchase.event.signedTransaction, "jws-new")
        XCTAssertEqual(purchase.event.source, "upload")
        XCTAssertEqual(purchase.event.signedDate, 0, "any notification is newer than a migrated upload")
        XCTAssertEqual(purchase.updatedAt, 200)
        XCTAssertEqual(try storage.households(subscribedTo: PurchaseKey(environment: "Production", originalTransactionId: "1000")), [h1, h2].sorted())
        XCTAssertEqual(try storage.subscription(household: h1)?.purchase, purchase)
    }

    /// Migration 3 keys purchases by (environment, original transaction id): every row keeps
    /// its environment; a household whose purchase row a Sandbox event had taken over gets
    /// its upload back as its Production purchase.
    func testMigration3KeysPurchasesByEnvironmentAndKeepsTheRows() throws {
        guard let url = ProcessInfo.processInfo.environment["KIDLEDGER_TEST_DATABASE_URL"], !url.isEmpty else {
            throw XCTSkip("KIDLEDGER_TEST_DATABASE_URL is not set")
        }
        let schema = "as_" + String(UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(20))
        let admin = try PGConnection(url: url)
        try admin.execute("CREATE SCHEMA \(schema)")
        defer { try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
        let db = try PGConnection(url: url, setup: ["SET search_path TO \(schema)"])
        XCTAssertEqual(try PGMigrator.migrate(db, PostgresSchema.migrations.filter { $0.version < 3 }), [1, 2])
        let (a, h1, h2) = (UUID().lowercased, UUID().lowercased, UUID().lowercased)
        try db.execute("""
            INSERT INTO accounts VALUES ('\(a)', 'ann', 'Ann', now());
            INSERT INTO households (id, name, currency, owner_account_id, created_at, modified_at, change_tag, incarnation, seq)
                VALUES ('\(h1)', 'Home', 'EUR', '\(a)', now(), now(), 'v1', 1, 3), ('\(h2)', 'Cabin', 'EUR', '\(a)', now(), now(), 'v1', 1, 3);
            INSERT INTO subscriptions VALUES ('\(h1)', 'jws-1', 'pro.yearly', '1000', to_timestamp(5), 'Production', to_timestamp(0.1), '\(a)');
            INSERT INTO subscriptions VALUES ('\(h2)', 'jws-2', 'pro.yearly', '2000', to_timestamp(9), 'Production', to_timestamp(0.2), '\(a)');
            INSERT INTO app_store_purchases (\(StoredPurchase.columns)) VALUES
                ('1000', 'Production', 'pro.yearly', to_timestamp(7), NULL, NULL, false, true, 1, 'DID_RENEW', NULL,
                 to_timestamp(0.3), 'n1', 'notification', 'jws-renewed', 'renewal', to_timestamp(0.4)),
                ('2000', 'Sandbox', 'pro.yearly', to_timestamp(9), to_timestamp(0.45), NULL, false, true, 2, 'REFUND', NULL,
                 to_timestamp(0.5), 'n2', 'notification', 'jws-sandbox', NULL, to_timestamp(0.6)),
                ('3000', 'Sandbox', 'pro.monthly', NULL, NULL, NULL, true, false, 3, 'DID_FAIL_TO_RENEW', 'GRACE_PERIOD',
                 to_timestamp(0.7), 'n3', 'notification', 'jws-3', NULL, to_timestamp(0.8));
            """)
        let storage = PostgresLedgerTransaction(db, writing: false)
        func purchases() throws -> [StoredPurchase] {
            try db.query("SELECT original_transaction_id, environment FROM app_store_purchases ORDER BY 1, 2").rows.map {
                try XCTUnwrap(storage.purchase(PurchaseKey(environment: $0.string(1), originalTransactionId: $0.string(0))))
            }
        }
        let before = try purchases()
        XCTAssertEqual(before.count, 3, "the Production row of 2000 was taken over by the Sandbox event")
        XCTAssertEqual(try PGMigrator.migrate(db, PostgresSchema.migrations).first, 3)

        let after = try purchases()
        XCTAssertEqual(after.count, 4)
        for p in before { XCTAssertTrue(after.contains(p), "\(p.event.originalTransactionId) is kept as it was") }
        XCTAssertEqual(try storage.subscription(household: h1)?.purchase, before[0])
        let restored = try XCTUnwrap(storage.subscription(household: h2)).purchase
        XCTAssertEqual(restored.event.environment, "Production")
        XCTAssertEqual(restored.event.signedTransaction, "jws-2")
        XCTAssertEqual(restored.event.signedDate, 0)
        XCTAssertEqual(try storage.households(subscribedTo: PurchaseKey(environment: "Sandbox", originalTransactionId: "2000")), [])
        XCTAssertEqual(try storage.households(subscribedTo: PurchaseKey(environment: "Production", originalTransactionId: "2000")), [h2])
        let key = try db.query("""
            SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
            WHERE i.indrelid = 'app_store_purchases'::regclass AND i.indisprimary ORDER BY a.attname
            """).rows.map { $0.string(0) }
        XCTAssertEqual(key, ["environment", "original_transaction_id"])
    }
}
#endif
