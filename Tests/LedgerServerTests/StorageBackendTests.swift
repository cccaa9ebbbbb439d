import Foundation
import LedgerServerTesting
import Synchronization
import XCTest
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStorageSQLite
#if Postgres
@testable import LedgerStoragePostgres
import PostgresKit
#endif

/// Choosing the storage at run time, and what differs between the backends: where handlers
/// run, what may be cached, readiness.
final class StorageBackendTests: XCTestCase {
    // MARK: workers

    func testWorkerPoolRunsEverythingRefusesPastItsBacklogAndDrainsOnStop() {
        let pool = WorkerPool(name: "test-worker", threads: 2, maxQueued: 3)
        let gate = DispatchSemaphore(value: 0)
        let ran = Mutex(0)
        // Two jobs hold both threads; three wait; the sixth finds no room.
        for _ in 0..<2 { XCTAssertTrue(pool.submit { gate.wait(); ran.withLock { $0 += 1 } }) }
        let deadline = Date().addingTimeInterval(5)
        while pool.queued > 0 && Date() < deadline { Thread.sleep(forTimeInterval: 0.001) }
        for _ in 0..<3 { XCTAssertTrue(pool.submit { ran.withLock { $0 += 1 } }) }
        XCTAssertFalse(pool.submit { ran.withLock { $0 += 1 } }, "the backlog is bounded")
        gate.signal(); gate.signal()
        pool.stop()
        XCTAssertEqual(ran.withLock { $0 }, 5, "stop runs what was queued")
        XCTAssertFalse(pool.submit {}, "nothing is taken after stop")
    }

    func testWorkerPoolUsesOnlyItsThreads() {
        let pool = WorkerPool(name: "test-worker", threads: 3, maxQueued: 1000)
        let threads = Mutex<Set<UInt>>([])
        let group = DispatchGroup()
        for _ in 0..<200 {
            group.enter()
            XCTAssertTrue(pool.submit {
                threads.withLock { _ = $0.insert(UInt(pthread_self())) }
                Thread.sleep(forTimeInterval: 0.0005)
                group.leave()
            })
        }
        group.wait()
        pool.stop()
        XCTAssertLessThanOrEqual(threads.withLock { $0.count }, 3)
    }

    // MARK: token cache with several processes

    func testTokenLookupsExpireWhenOtherProcessesMayRevoke() {
        let cache = ReadCache(tokenLifetime: 0.05)
        let caller = Caller(accountId: "a", tokenId: "t")
        cache.store(caller, token: tokenKey(1), readAt: cache.currentTokens)
        XCTAssertEqual(cache.caller(token: tokenKey(1))?.tokenId, "t")
        Thread.sleep(forTimeInterval: 0.08)
        XCTAssertNil(cache.caller(token: tokenKey(1)), "a lookup is kept for its lifetime at most")
        // Without a lifetime (one process) it lives until a revocation.
        let single = ReadCache()
        single.store(caller, token: tokenKey(1), readAt: single.currentTokens)
        Thread.sleep(forTimeInterval: 0.06)
        XCTAssertNotNil(single.caller(token: tokenKey(1)))
    }

    func testTokenCacheIsBypassedWhileTheChangeBusIsDown() {
        let cache = ReadCache(tokenLifetime: 60)
        let caller = Caller(accountId: "a", tokenId: "t")
        cache.store(caller, token: tokenKey(1), readAt: cache.currentTokens)
        cache.bypassTokens = true
        XCTAssertNil(cache.caller(token: tokenKey(1)), "turning the bypass on forgets what was kept")
        cache.store(caller, token: tokenKey(2), readAt: cache.currentTokens)
        cache.bypassTokens = false
        XCTAssertNil(cache.caller(token: tokenKey(2)), "nothing is kept while bypassed")
        cache.store(caller, token: tokenKey(2), readAt: cache.currentTokens)
        XCTAssertNotNil(cache.caller(token: tokenKey(2)))
    }

    /// After the change bus reconnects (announcements may have been lost) every parked
    /// long-poll wakes to look at its household again.
    func testNotifyEveryoneWakesEveryParkedPollAsAChange() {
        let notifier = ChangeNotifier()
        let woken = Mutex<[Bool]>([])
        let group = DispatchGroup()
        for h in ["h1", "h2", "h2"] {
            group.enter()
            XCTAssertNotNil(notifier.register(household: h, token: "t-" + h, seconds: 30) { timedOut in
                woken.withLock { $0.append(timedOut) }
                group.leave()
            })
        }
        XCTAssertEqual(notifier.parked, 3)
        notifier.notifyEveryone()
        XCTAssertEqual(group.wait(timeout: .now() + 5), .success)
        XCTAssertEqual(woken.withLock { $0 }, [false, false, false])
        XCTAssertEqual(notifier.parked, 0)
        XCTAssertNotNil(notifier.register(household: "h1", token: "t", seconds: 0.01) { _ in }, "still takes new waiters")
    }

    // MARK: keys shared by several processes

    /// Processes that start together over one shared data folder end up with one cursor key
    /// and one entitlement signing key (a cursor made by one is accepted by the others).
    func testProcessesStartingTogetherOverOneFolderShareTheKeys() throws {
        for _ in 0..<5 {
            let dir = NSTemporaryDirectory() + "kidledger-keys-\(UUID().uuidString)"
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(atPath: dir) }
            let cursors = Mutex<Set<String>>([])
            let kids = Mutex<Set<String>>([])
            DispatchQueue.concurrentPerform(iterations: 8) { _ in
                let c = Cursor(directory: dir).encode(list: "transactions h", [42])
                cursors.withLock { _ = $0.insert(c) }
                if let keys = try? EntitlementKeys(dataDirectory: dir) { kids.withLock { _ = $0.insert(keys.signingKid) } }
            }
            XCTAssertEqual(cursors.withLock { $0.count }, 1, "one cursor key")
            XCTAssertEqual(kids.withLock { $0.count }, 1, "one signing key")
            let later = try Cursor(directory: dir).decode(cursors.withLock { $0.first }, list: "transactions h")
            XCTAssertEqual(later, 42)
            let left = try FileManager.default.contentsOfDirectory(atPath: dir) + FileManager.default.contentsOfDirectory(atPath: dir + "/entitlement-keys")
            XCTAssertEqual(left.sorted(), ["cursor.key", "entitlement-keys", "signing-key.pem"], "no partial files left")
        }
    }

    // MARK: choosing the backend

    func testSQLiteIsTheDefaultAndCachesAndRunsShortRequestsOnTheLoops() throws {
        try TestServer.requireSQLite("the default backend")
        let s = try TestServer()
        defer { s.stop() }
        XCTAssertTrue(s.app.services.storage is SQLiteLedgerStorage)
        XCTAssertTrue(s.app.services.storage.cachesReads)
        XCTAssertFalse(s.app.services.backend.offLoop)
        XCTAssertEqual(s.call("GET", "/readyz").status, 200)
    }

    #if !Postgres
    func testADatabaseURLNeedsABuildWithPostgreSQL() {
        XCTAssertNotNil(LedgerAppConfiguration.databaseURLProblem("postgres://localhost/kidledger"))
        var c = LedgerAppConfiguration(dataDirectory: NSTemporaryDirectory() + "kidledger-nopg-\(UUID().uuidString)", port: 0)
        defer { try? FileManager.default.removeItem(atPath: c.dataDirectory) }
        c.databaseURL = "postgres://localhost/kidledger"
        c.logging = false
        XCTAssertThrowsError(try LedgerApp(configuration: c)) { e in
            XCTAssertTrue(String(describing: e).contains("no PostgreSQL support"), "\(e)")
            XCTAssertTrue(String(describing: e).contains("--traits Postgres"), "\(e)")
        }
    }
    #else
    func testDatabaseURLsAreCheckedBeforeConnecting() {
        XCTAssertNil(LedgerAppConfiguration.databaseURLProblem("postgres://u:p@127.0.0.1:5432/kidledger?sslmode=disable"))
        XCTAssertNil(LedgerAppConfiguration.databaseURLProblem("postgresql:///kidledger"))
        XCTAssertTrue(LedgerAppConfiguration.databaseURLProblem("mysql://localhost/k")?.contains("postgres://") == true)
        XCTAssertTrue(LedgerAppConfiguration.databaseURLProblem("/var/lib/kidledger")?.contains("postgres://") == true)
        let bogus = LedgerAppConfiguration.databaseURLProblem("postgres://localhost/k?bogus_option=1")
        XCTAssertTrue(bogus?.contains("bogus_option") == true, bogus ?? "accepted")
    }

    func testAnUnreachableDatabaseStopsTheStartWithItsReason() throws {
        var c = LedgerAppConfiguration(dataDirectory: NSTemporaryDirectory() + "kidledger-pgdown-\(UUID().uuidString)", port: 0)
        defer { try? FileManager.default.removeItem(atPath: c.dataDirectory) }
        c.databaseURL = "postgres://kid:secret@127.0.0.1:1/kidledger"
        c.logging = false
        XCTAssertThrowsError(try LedgerApp(configuration: c)) { e in
            let text = String(describing: e)
            XCTAssertTrue(text.contains("Connection refused") || text.contains("connection"), text)
            XCTAssertFalse(text.contains("secret"), "the password is not repeated")
        }
    }

    func testThreeServersStartingAtOnceMigrateOnceAndServeWithoutSQLite() throws {
        guard let url = TestServer.postgresURL else { throw XCTSkip("KIDLEDGER_TEST_DATABASE_URL is not set") }
        let fresh = try TestServer.freshSchema(url, prefix: "start")
        defer { TestServer.dropSchema(fresh.schema) }
        let apps = Mutex<[LedgerApp]>([])
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 3) { i in
            var c = LedgerAppConfiguration(dataDirectory: NSTemporaryDirectory() + "kidledger-start-\(UUID().uuidString)", port: 0)
            c.databaseURL = fresh.url
            c.databaseConnections = 2
            c.logging = false
            do {
                let app = try LedgerApp(configuration: c)
                try app.start()
                apps.withLock { $0.append(app) }
            } catch {
                failures.withLock { $0.append("\(error)") }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        let started = apps.withLock { $0 }
        defer { for app in started { app.stop(); try? FileManager.default.removeItem(atPath: app.configuration.dataDirectory) } }
        let versions = try PGConnection(url: fresh.url).query("SELECT version FROM schema_version ORDER BY version").rows.map { $0.int(0) }
        XCTAssertEqual(versions, PostgresSchema.migrations.map { Int64($0.version) }.sorted(), "each migration applied once")
        for app in started {
            XCTAssertFalse(app.services.storage is SQLiteLedgerStorage, "nothing SQLite-shaped over PostgreSQL")
            XCTAssertFalse(app.services.storage.cachesReads, "no response cache with several processes")
            XCTAssertTrue(app.services.backend.offLoop)
            XCTAssertFalse(FileManager.default.fileExists(atPath: app.configuration.databasePath))
            let r = TestServer.request(base: "http://127.0.0.1:\(app.port)", "GET", "/readyz", token: nil, json: nil, rawBody: nil,
                                       headers: [:], timeout: 10)
            XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        }
    }

    func testBackupOverPostgreSQLSaysToUsePgDumpAndCheckReadsTheDatabase() throws {
        guard TestServer.postgresURL != nil else { throw XCTSkip("KIDLEDGER_TEST_DATABASE_URL is not set") }
        let s = try TestServer()
        defer { s.stop() }
        XCTAssertThrowsError(try AdminCommands.backup(s.app.configuration, to: NSTemporaryDirectory() + "kl.dump")) { e in
            XCTAssertTrue(String(describing: e).contains("pg_dump"), "\(e)")
            XCTAssertTrue(String(describing: e).contains("cursor.key"), "\(e)")
        }
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let c = s.child(t, household: h)
        let path = "/v1/households/\(h)/children/\(c)/transactions"
        XCTAssertEqual(s.call("POST", path, token: t, json: .obj(["amountCents": 500])).status, 201)
        XCTAssertEqual(s.call("POST", path, token: t, json: .obj(["amountCents": -125])).status, 201)
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(c)/undo-last", token: t).status, 201)
        var report = try s.check()
        XCTAssertEqual(report.problems, [])
        XCTAssertEqual(report.children, 1)
        XCTAssertEqual(report.transactions, 3)

        // A reversal that no longer mirrors its target, a wrong reserved id, a stale balance.
        try s.execute("UPDATE transactions SET amount_cents = 100 WHERE reverses_id IS NOT NULL")
        try s.execute("UPDATE transactions SET reversal_id = gen_random_uuid() WHERE amount_cents = 500")
        try s.execute("UPDATE children SET balance_cents = 7")
        report = try s.check()
        XCTAssertEqual(report.problems.count, 3, report.problems.joined(separator: "\n"))
        XCTAssertTrue(report.problems.contains { $0.hasPrefix("reversal: ") })
        XCTAssertTrue(report.problems.contains { $0.hasPrefix("key: ") })
        XCTAssertTrue(report.problems.contains { $0.hasPrefix("balance: child \(c) caches 7") })
    }
    #endif
}
