#if Postgres
import Foundation
import LedgerModel
import PostgresKit
import Synchronization
import XCTest
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStoragePostgres

/// What one bus delivered.
private final class Received: Sendable {
    let commits = Mutex<[(Date, StorageCommit)]>([])
    let resyncs = Mutex(0)

    func wait(for predicate: (StorageCommit) -> Bool, timeout: Double = 5) -> Date? {
        let end = Date().addingTimeInterval(timeout)
        while Date() < end {
            if let hit = commits.withLock({ $0.first { predicate($0.1) } }) { return hit.0 }
            usleep(500)
        }
        return nil
    }
}

/// Two "processes" (two storages, two buses) on one database: a commit through one reaches
/// the other by LISTEN/NOTIFY.
final class PostgresChangeBusTests: XCTestCase {
    private var url = ""
    private var schema = ""
    private var channel = ""
    private var buses: [PostgresChangeBus] = []

    override func setUpWithError() throws {
        guard let u = ProcessInfo.processInfo.environment["KIDLEDGER_TEST_DATABASE_URL"], !u.isEmpty else {
            throw XCTSkip("KIDLEDGER_TEST_DATABASE_URL is not set")
        }
        url = u
        let suffix = String(UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(16))
        schema = "bus_" + suffix
        channel = "kidledger_test_" + suffix
        try PGConnection(url: url).execute("CREATE SCHEMA \(schema)")
    }

    override func tearDown() {
        for b in buses { b.stop() }
        buses = []
        if !schema.isEmpty, let admin = try? PGConnection(url: url) { try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
    }

    /// A process: its storage publishes every commit on its bus; what the bus hears lands in `received`.
    private func process() -> (PostgresLedgerStorage, Received, PostgresChangeBus) {
        let received = Received()
        let bus = PostgresChangeBus(url: url, channel: channel,
                                    onRemote: { c in received.commits.withLock { $0.append((Date(), c)) } },
                                    onResync: { received.resyncs.withLock { $0 += 1 } })
        bus.start()
        buses.append(bus)
        let storage = PostgresLedgerStorage(url: url, connections: 4, setup: ["SET search_path TO \(schema)"]) { bus.publish($0) }
        return (storage, received, bus)
    }

    private func waitUntilListening(_ bus: PostgresChangeBus) {
        let end = Date().addingTimeInterval(5)
        while !bus.isListening && Date() < end { usleep(1000) }
        XCTAssertTrue(bus.isListening)
    }

    func testPayloadsSplitAndParse() {
        var c = StorageCommit()
        for _ in 0..<400 { c.touched.insert(UUID().lowercased) }
        c.revokedTokens = [UUID().lowercased]
        let payloads = PostgresChangeBus.payloads(c, origin: "0123456789abcdef")
        XCTAssertGreaterThan(payloads.count, 1)
        XCTAssertTrue(payloads.allSatisfy { $0.utf8.count <= PostgresChangeBus.maxPayload })
        XCTAssertTrue(payloads.allSatisfy { PostgresChangeBus.origin(ofPayload: $0) == "0123456789abcdef" })
        var back = StorageCommit()
        for p in payloads {
            let part = PostgresChangeBus.commit(fromPayload: p)
            back.touched.formUnion(part.touched)
            back.revokedTokens.formUnion(part.revokedTokens)
        }
        XCTAssertEqual(back, c)
        XCTAssertEqual(PostgresChangeBus.payloads(StorageCommit(), origin: "o"), [])
        XCTAssertNil(PostgresChangeBus.origin(ofPayload: "h:1"))
        XCTAssertEqual(PostgresChangeBus.commit(fromPayload: "x:1,,h:"), StorageCommit(touched: [""]))
    }

    func testACommitThroughOneProcessReachesTheOtherQuickly() throws {
        let (a, heardByA, busA) = process()
        let (_, heardByB, busB) = process()
        waitUntilListening(busA)
        waitUntilListening(busB)
        XCTAssertEqual(try a.migrate(), PostgresSchema.migrations.map(\.version))
        let now: Int64 = 1_764_770_000_000
        let (owner, token) = try a.writeAndWait { try $0.createAccount(handle: "mum", displayName: "Mum", deviceName: "p", now: now) }
        let h = UUID().lowercased, c = UUID().lowercased
        _ = try a.writeAndWait { tx in
            _ = try tx.createHousehold(id: h, name: "Home", currency: "EUR", owner: owner.id, ifAbsentOnly: true, now: now)
            return try tx.createChild(household: h, account: owner.id, id: c, name: "Ada", sortOrder: nil, now: now).isCreated
        }
        XCTAssertNotNil(heardByB.wait { $0.touched.contains(h) })

        var latencies: [Double] = []
        for i in 0..<30 {
            let t = NewTransaction(id: UUID().lowercased, childId: c, amountCents: Int64(i + 1), note: "", source: .api,
                                   createdAt: nil, reversesId: nil, clientChosenId: true)
            heardByB.commits.withLock { $0.removeAll() }
            _ = try a.writeNow { try $0.addTransaction(household: h, author: owner.id, t, now: now) }
            let committed = Date()
            guard let heard = heardByB.wait(for: { $0.touched.contains(h) }) else { return XCTFail("write \(i) not heard") }
            latencies.append(heard.timeIntervalSince(committed))
        }
        let p50 = latencies.sorted()[latencies.count / 2]
        XCTAssertLessThan(p50, 0.010, "p50 \(p50 * 1000) ms")

        // A revoked token is announced; a process never hears its own commits.
        _ = try a.writeNow { try $0.revokeToken(id: token.record.id, account: owner.id, at: now) }
        XCTAssertNotNil(heardByB.wait { $0.revokedTokens.contains(token.record.id) })
        XCTAssertTrue(heardByA.commits.withLock { $0.isEmpty }, "own notifications are skipped")
    }

    /// Two processes whose notifications leave on the same database session (a backend pid
    /// recycled for another process's session, or a pooler in front of PostgreSQL): each
    /// hears the other's and skips only its own.
    func testAProcessSkipsOnlyItsOwnNotificationsEvenOnASharedSession() throws {
        let shared = PGPool(url: url, size: 1)
        let heardByA = Received(), heardByB = Received()
        let a = PostgresChangeBus(url: url, channel: channel, publisher: shared,
                                  onRemote: { c in heardByA.commits.withLock { $0.append((Date(), c)) } }, onResync: {})
        let b = PostgresChangeBus(url: url, channel: channel, publisher: shared,
                                  onRemote: { c in heardByB.commits.withLock { $0.append((Date(), c)) } }, onResync: {})
        for bus in [a, b] {
            bus.start()
            buses.append(bus)
            waitUntilListening(bus)
        }
        XCTAssertNotEqual(a.origin, b.origin)
        let fromA = UUID().lowercased, fromB = UUID().lowercased
        a.publish(StorageCommit(touched: [fromA]))
        XCTAssertNotNil(heardByB.wait { $0.touched.contains(fromA) })
        b.publish(StorageCommit(touched: [fromB]))
        XCTAssertNotNil(heardByA.wait { $0.touched.contains(fromB) }, "a notification from another process on a session this one used")
        XCTAssertNil(heardByA.wait(for: { $0.touched.contains(fromA) }, timeout: 0.3), "own notifications are skipped")
        XCTAssertNil(heardByB.wait(for: { $0.touched.contains(fromB) }, timeout: 0.3))
    }

    func testListenerReconnectsListensAgainAndAsksForAResync() throws {
        let (_, _, busA) = process()
        let (_, heardByB, busB) = process()
        waitUntilListening(busA)
        waitUntilListening(busB)
        XCTAssertEqual(heardByB.resyncs.withLock { $0 }, 1)
        // End B's listening session from outside, as a database restart would.
        let admin = try PGConnection(url: url)
        let pids = try admin.query("SELECT pid FROM pg_stat_activity WHERE query LIKE $1", [.text("LISTEN \"\(channel)\"%")]).rows.map { $0.int(0) }
        XCTAssertEqual(pids.count, 2)
        for pid in pids { try admin.query("SELECT pg_terminate_backend($1::integer)", [.int(pid)]) }
        let end = Date().addingTimeInterval(10)
        while heardByB.resyncs.withLock({ $0 }) < 2 && Date() < end { usleep(1000) }
        XCTAssertEqual(heardByB.resyncs.withLock { $0 }, 2, "waiters are told to look again after a reconnect")
        waitUntilListening(busB)
        let h = UUID().lowercased
        busA.publish(StorageCommit(touched: [h]))
        XCTAssertNotNil(heardByB.wait { $0.touched.contains(h) }, "notifications arrive again")
    }
}
#endif
