#if Postgres
import Foundation
import PostgresKit
import Synchronization
import XCTest

final class PGConnectionTests: XCTestCase {
    var db: PGTestDatabase!

    override func setUpWithError() throws { db = try PGTestDatabase.make() }
    override func tearDown() { db?.drop() }

    func testTypedValuesRoundTrip() throws {
        let c = try db.connect()
        try c.execute("CREATE TABLE v (i bigint, s integer, b boolean, t text, u uuid, ts timestamptz, by bytea)")
        let u = "0E0B5A1C-7D4F-4B8A-9C3D-2E1F0A9B8C7D"
        let rows: [[PGValue]] = [
            [.int(Int64.min), .int(-7), .bool(true), .text("héllo 👋"), .uuid(u), .timestamp(ms: 1_764_770_000_123), .bytes([0, 1, 255])],
            [.int(Int64.max), .int(0), .bool(false), .text(""), .uuid(u.lowercased()), .timestamp(ms: -1), .bytes([])],
            [.null, .null, .null, .null, .null, .null, .null],
        ]
        for r in rows { try c.query("INSERT INTO v VALUES ($1, $2, $3, $4, $5, $6, $7)", r) }
        let res = try c.query("SELECT i, s, b, t, u, ts, by FROM v ORDER BY i NULLS LAST")
        XCTAssertEqual(res.count, 3)
        XCTAssertEqual(res[0].int(0), Int64.min)
        XCTAssertEqual(res[0].int(1), -7)
        XCTAssertTrue(res[0].bool(2))
        XCTAssertEqual(res[0].string(3), "héllo 👋")
        XCTAssertEqual(res[0].uuid(4), u.lowercased())
        XCTAssertEqual(res[0].timestampMs(5), 1_764_770_000_123)
        XCTAssertEqual(res[0].bytea(6), [0, 1, 255])
        XCTAssertEqual(res[1].int(0), Int64.max)
        XCTAssertFalse(res[1].bool(2))
        XCTAssertEqual(res[1].string(3), "")
        XCTAssertEqual(res[1].timestampMs(5), -1, "before 1970 rounds toward minus infinity")
        XCTAssertEqual(res[1].bytea(6), [])
        for col in 0..<7 { XCTAssertTrue(res[2].isNull(col)) }
        XCTAssertNil(res[2].optionalInt(0))
        XCTAssertNil(res[2].optionalUUID(4))
        // The server agrees on the instant, not only the round trip.
        let iso = try c.queryOne("SELECT to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS') FROM v WHERE i = $1", [.int(Int64.min)])!
        XCTAssertEqual(iso.string(0), "2025-12-03T13:53:20.123")
    }

    func testAffectedRowsAndNullParameterTypes() throws {
        let c = try db.connect()
        try c.execute("CREATE TABLE n (id bigint PRIMARY KEY, note text)")
        try c.query("INSERT INTO n VALUES (1, 'a'), (2, 'b'), (3, NULL)")
        // The same SQL with NULL and with a value: two prepared forms, both work.
        XCTAssertEqual(try c.query("UPDATE n SET note = COALESCE($1, note) WHERE id >= $2", [.null, .int(2)]).affectedRows, 2)
        XCTAssertEqual(try c.query("UPDATE n SET note = COALESCE($1, note) WHERE id >= $2", [.text("z"), .int(2)]).affectedRows, 2)
        XCTAssertEqual(try c.query("SELECT note FROM n ORDER BY id").rows.map { $0.string(0) }, ["a", "z", "z"])
    }

    func testInvalidParameterIsRefusedBeforeSending() throws {
        let c = try db.connect()
        XCTAssertThrowsError(try c.query("SELECT $1::uuid", [.uuid("not-a-uuid")])) { e in
            XCTAssertEqual((e as? PGError)?.kind, .invalidParameter)
        }
        XCTAssertThrowsError(try c.query("SELECT $1", [.timestamp(ms: Int64.max)])) { e in
            XCTAssertEqual((e as? PGError)?.kind, .invalidParameter)
        }
        XCTAssertTrue(c.isConnected)
    }

    func testUniqueViolationNamesItsConstraint() throws {
        let c = try db.connect()
        try c.execute("CREATE TABLE u (id bigint CONSTRAINT u_pk PRIMARY KEY)")
        try c.query("INSERT INTO u VALUES ($1)", [.int(1)])
        XCTAssertThrowsError(try c.query("INSERT INTO u VALUES ($1)", [.int(1)])) { e in
            let pg = e as? PGError
            XCTAssertEqual(pg?.kind, .uniqueViolation)
            XCTAssertEqual(pg?.sqlState, "23505")
            XCTAssertEqual(pg?.constraint, "u_pk")
            XCTAssertEqual(pg?.isUnavailable, false)
        }
        XCTAssertEqual(try c.queryOne("SELECT count(*) FROM u")?.int(0), 1)
    }

    func testTransactionRollsBackOnErrorAndCommitsOtherwise() throws {
        let c = try db.connect()
        try c.execute("CREATE TABLE t (id bigint PRIMARY KEY)")
        struct Boom: Error {}
        XCTAssertThrowsError(try c.transaction { try c.query("INSERT INTO t VALUES (1)"); throw Boom() })
        XCTAssertFalse(c.isInTransaction)
        XCTAssertEqual(try c.queryOne("SELECT count(*) FROM t")?.int(0), 0)
        try c.transaction { try c.query("INSERT INTO t VALUES (2)") }
        XCTAssertEqual(try c.queryOne("SELECT count(*) FROM t")?.int(0), 1)
    }

    func testQueuedStatementsRunInOrderWithTheNextQuery() throws {
        let c = try db.connect()
        try c.execute("CREATE TABLE q (id bigint PRIMARY KEY, v text)")
        c.later("INSERT INTO q VALUES ($1, $2)", [.int(1), .text("a")])
        c.later("UPDATE q SET v = $2 WHERE id = $1", [.int(1), .text("b")])
        c.later("INSERT INTO q VALUES ($1, $2)", [.int(2), .text("c")])
        XCTAssertTrue(c.hasQueued)
        // The read sees every queued write, in the order they were asked for.
        let rows = try c.query("SELECT id, v FROM q ORDER BY id").rows
        XCTAssertFalse(c.hasQueued)
        XCTAssertEqual(rows.map { $0.string(1) }, ["b", "c"])
        // The statements stay prepared: the same text again goes out without preparing.
        c.later("UPDATE q SET v = $2 WHERE id = $1", [.int(2), .text("d")])
        XCTAssertEqual(try c.queryOne("SELECT v FROM q WHERE id = $1", [.int(2)])?.string(0), "d")
        // INSERT, UPDATE, the two SELECTs above and this one: each prepared once.
        XCTAssertEqual(try c.queryOne("SELECT count(*) FROM pg_prepared_statements")?.int(0), 5)
    }

    func testAQueuedStatementsFailureIsThrownWithTheNextQueryAndUndoesItsRoundTrip() throws {
        let c = try db.connect()
        try c.execute("CREATE TABLE q (id bigint CONSTRAINT q_pk PRIMARY KEY)")
        try c.query("INSERT INTO q VALUES ($1)", [.int(1)])
        c.later("INSERT INTO q VALUES ($1)", [.int(2)])
        c.later("INSERT INTO q VALUES ($1)", [.int(1)])   // taken
        c.later("INSERT INTO q VALUES ($1)", [.int(3)])
        XCTAssertThrowsError(try c.query("SELECT count(*) FROM q")) { e in
            XCTAssertEqual((e as? PGError)?.kind, .uniqueViolation)
            XCTAssertEqual((e as? PGError)?.constraint, "q_pk")
        }
        // Outside a transaction one round trip is one implicit transaction: nothing of it
        // stays, and the session goes on.
        XCTAssertFalse(c.hasQueued)
        XCTAssertFalse(c.isInTransaction)
        XCTAssertEqual(try c.query("SELECT id FROM q ORDER BY id").rows.map { $0.int(0) }, [1])
    }

    func testTransactionSendsQueuedWritesWithItsCommitAndRollsBackOnTheirFailure() throws {
        let c = try db.connect()
        try c.execute("CREATE TABLE q (id bigint PRIMARY KEY)")
        try c.transaction {
            c.later("INSERT INTO q VALUES ($1)", [.int(1)])
            c.later("INSERT INTO q VALUES ($1)", [.int(2)])
        }
        XCTAssertFalse(c.isInTransaction)
        XCTAssertEqual(try c.queryOne("SELECT count(*) FROM q")?.int(0), 2)
        // A queued write that fails at COMMIT: nothing of the transaction stays.
        XCTAssertThrowsError(try c.transaction {
            c.later("INSERT INTO q VALUES ($1)", [.int(3)])
            c.later("INSERT INTO q VALUES ($1)", [.int(1)])
        }) { e in
            XCTAssertEqual((e as? PGError)?.kind, .uniqueViolation)
            XCTAssertEqual((e as? PGError)?.commitOutcomeUnknown, false)
        }
        XCTAssertFalse(c.isInTransaction)
        XCTAssertEqual(try c.queryOne("SELECT count(*) FROM q")?.int(0), 2)
        // A body that throws before anything was sent leaves no transaction open.
        struct Boom: Error {}
        XCTAssertThrowsError(try c.transaction { c.later("INSERT INTO q VALUES ($1)", [.int(4)]); throw Boom() })
        XCTAssertFalse(c.isInTransaction)
        XCTAssertEqual(try c.queryOne("SELECT count(*) FROM q")?.int(0), 2)
    }

    func testAnInvalidParameterInARoundTripSendsNothingAndKeepsTheSession() throws {
        let c = try db.connect()
        try c.execute("CREATE TABLE q (id uuid PRIMARY KEY)")
        let pid = c.backendPID
        XCTAssertThrowsError(try c.transaction {
            c.later("INSERT INTO q VALUES ($1)", [.uuid("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0")])
            return try c.query("SELECT count(*) FROM q WHERE id = $1", [.uuid("not-a-uuid")])
        }) { e in XCTAssertEqual((e as? PGError)?.kind, .invalidParameter) }
        XCTAssertEqual(c.backendPID, pid, "the same session")
        XCTAssertFalse(c.isInTransaction)
        XCTAssertEqual(try c.queryOne("SELECT count(*) FROM q")?.int(0), 0)
    }

    func testUUIDsRoundTripInBothCasesAndMalformedOnesAreRefused() throws {
        let c = try db.connect()
        let u = "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0"
        XCTAssertEqual(try c.queryOne("SELECT $1::uuid", [.uuid(u)])?.uuid(0), u.lowercased())
        XCTAssertEqual(try c.queryOne("SELECT $1::uuid::text", [.uuid(u.lowercased())])?.string(0), u.lowercased())
        for bad in ["0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F", "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1FG", "0F1E2D3C4B5A-6978-8796-A5B4C3D2E1F00",
                    "", "0F1E2D3C-4B5A-6978-8796-A5B4C3D2E1F0 "] {
            XCTAssertThrowsError(try c.query("SELECT $1::uuid", [.uuid(bad)]), bad) { e in
                XCTAssertEqual((e as? PGError)?.kind, .invalidParameter)
            }
        }
    }

    func testSerializationFailureAndLockNotAvailable() throws {
        let a = try db.connect(), b = try db.connect()
        try a.execute("CREATE TABLE s (id bigint PRIMARY KEY, v bigint)")
        try a.execute("INSERT INTO s VALUES (1, 0)")
        try a.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        XCTAssertEqual(try a.queryOne("SELECT v FROM s WHERE id = 1")?.int(0), 0)
        try b.execute("UPDATE s SET v = 1 WHERE id = 1")
        XCTAssertThrowsError(try a.query("UPDATE s SET v = 2 WHERE id = 1")) { e in
            XCTAssertEqual((e as? PGError)?.kind, .serializationFailure)
            XCTAssertEqual((e as? PGError)?.isRetryableTransaction, true)
        }
        try a.execute("ROLLBACK")

        try b.execute("BEGIN")
        try b.execute("SELECT * FROM s WHERE id = 1 FOR UPDATE")
        XCTAssertThrowsError(try a.query("SELECT * FROM s WHERE id = 1 FOR UPDATE NOWAIT")) { e in
            XCTAssertEqual((e as? PGError)?.kind, .lockNotAvailable)
        }
        try b.execute("ROLLBACK")
    }

    func testTerminatedSessionIsUnavailableThenReconnects() throws {
        let victim = try db.connect(), admin = try db.connect()
        try victim.execute("CREATE TABLE r (id bigint)")
        try victim.query("INSERT INTO r VALUES ($1)", [.int(1)]) // prepared in the first session
        let pid = victim.backendPID
        try admin.query("SELECT pg_terminate_backend($1::integer)", [.int(Int64(pid))])
        XCTAssertThrowsError(try victim.query("SELECT count(*) FROM r")) { e in
            let pg = e as? PGError
            XCTAssertEqual(pg?.isUnavailable, true, "\(String(describing: pg))")
        }
        XCTAssertFalse(victim.isConnected)
        XCTAssertThrowsError(try victim.query("SELECT 1")) { e in XCTAssertEqual((e as? PGError)?.kind, .connectionLost) }
        try victim.reconnect()
        XCTAssertEqual(victim.session, 2)
        XCTAssertNotEqual(victim.backendPID, pid)
        // The setup (search_path) ran again and statements are prepared anew.
        try victim.query("INSERT INTO r VALUES ($1)", [.int(2)])
        XCTAssertEqual(try victim.queryOne("SELECT count(*) FROM r")?.int(0), 2)
    }

    func testUnreachableServerIsConnectionLost() throws {
        // A loopback port nothing listens on (bound and closed again).
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) } }
        _ = withUnsafeMutablePointer(to: &addr) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) } }
        let port = UInt16(bigEndian: addr.sin_port)
        close(fd)
        XCTAssertThrowsError(try PGConnection(url: "postgres://postgres@127.0.0.1:\(port)/kidledger", connectTimeout: 2)) { e in
            XCTAssertEqual((e as? PGError)?.kind, .connectionLost)
        }
    }

    func testAnAnswerThatDoesNotComeInTimeEndsTheSession() throws {
        let c = try PGConnection(url: db.url, setup: db.setup, answerTimeout: 0.5)
        try c.execute("CREATE TABLE a (id bigint); INSERT INTO a VALUES (1)")
        XCTAssertEqual(try c.queryOne("SELECT count(*) FROM a WHERE id >= $1", [.int(0)])?.int(0), 1)
        XCTAssertThrowsError(try c.execute("SELECT 1; SELECT * FROM no_such_table; SELECT 2")) { e in
            XCTAssertEqual((e as? PGError)?.sqlState, "42P01", "the failed statement's error, as PQexec reports it")
        }

        // A slow statement: the wait ends at the deadline, with the session.
        var started = Date()
        XCTAssertThrowsError(try c.query("SELECT pg_sleep($1::float8)", [.text("5")])) { e in
            XCTAssertEqual((e as? PGError)?.kind, .connectionLost)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 2)
        XCTAssertFalse(c.isConnected)
        try c.reconnect()
        XCTAssertEqual(try c.queryOne("SELECT count(*) FROM a WHERE id >= $1", [.int(0)])?.int(0), 1, "prepared again in the new session")

        // A COMMIT that does not answer in time: its outcome is unknown (here it committed).
        try c.execute("""
            CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(1.5); RETURN NULL; END $$;
            CREATE CONSTRAINT TRIGGER slow AFTER INSERT ON a DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION slow_commit();
            """)
        started = Date()
        XCTAssertThrowsError(try c.transaction { try c.query("INSERT INTO a VALUES ($1)", [.int(2)]) }) { e in
            XCTAssertEqual((e as? PGError)?.kind, .connectionLost)
            XCTAssertEqual((e as? PGError)?.commitOutcomeUnknown, true)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.4)
        let admin = try db.connect()
        var committed: Int64 = 0
        for _ in 0..<60 where committed == 0 {
            committed = try admin.queryOne("SELECT count(*) FROM a WHERE id = 2")!.int(0)
            if committed == 0 { usleep(50_000) }
        }
        XCTAssertEqual(committed, 1)

        // A pool hands the deadline to its connections.
        let pool = PGPool(url: db.url, size: 1, setup: db.setup, answerTimeout: 0.3)
        started = Date()
        XCTAssertThrowsError(try pool.with { try $0.execute("SELECT pg_sleep(5)") }) { e in
            XCTAssertEqual((e as? PGError)?.isUnavailable, true)
        }
        XCTAssertLessThan(Date().timeIntervalSince(started), 2)
    }

    /// A database host that stops answering (here: its backend process stopped) costs a
    /// statement its answer timeout, not forever.
    func testAStoppedServerProcessCostsTheAnswerTimeout() throws {
        let c = try PGConnection(url: db.url, setup: db.setup, answerTimeout: 0.5)
        let pid = c.backendPID
        guard kill(pid, SIGSTOP) == 0 else { throw XCTSkip("cannot stop the backend process (\(String(cString: strerror(errno))))") }
        defer { kill(pid, SIGCONT) }
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<PGError?>(nil)
        let started = Date()
        Thread.detachNewThread {
            do { _ = try c.queryOne("SELECT 1") } catch { outcome.withLock { $0 = error as? PGError } }
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 5), .success, "the statement is still waiting after 5 s")
        XCTAssertLessThan(Date().timeIntervalSince(started), 2)
        XCTAssertEqual(outcome.withLock { $0 }?.kind, .connectionLost)
    }

    func testListenNotifyThroughThePolledSocketAndAfterReconnect() throws {
        let listener = try db.connect(), sender = try db.connect(), admin = try db.connect()
        try listener.listen("ledger wakeups")
        XCTAssertGreaterThanOrEqual(listener.socket, 0)
        XCTAssertEqual(try listener.waitForNotifications(timeout: 0.05), [])
        try sender.notify("ledger wakeups", payload: "h1")
        let got = try listener.waitForNotifications(timeout: 5)
        XCTAssertEqual(got.map(\.payload), ["h1"])
        XCTAssertEqual(got.first?.channel, "ledger wakeups")
        XCTAssertEqual(got.first?.pid, sender.backendPID)

        // Inside a transaction the notification waits for COMMIT.
        try sender.transaction {
            try sender.notify("ledger wakeups", payload: "h2")
            XCTAssertEqual(try listener.waitForNotifications(timeout: 0.2), [])
        }
        XCTAssertEqual(try listener.waitForNotifications(timeout: 5).map(\.payload), ["h2"])

        // The session dies: waiting says so; after reconnecting the channel is listened to again.
        try admin.query("SELECT pg_terminate_backend($1::integer)", [.int(Int64(listener.backendPID))])
        XCTAssertThrowsError(try { for _ in 0..<50 { _ = try listener.waitForNotifications(timeout: 0.1) } }()) { e in
            XCTAssertEqual((e as? PGError)?.isUnavailable, true)
        }
        try listener.reconnect()
        try sender.notify("ledger wakeups", payload: "h3")
        XCTAssertEqual(try listener.waitForNotifications(timeout: 5).map(\.payload), ["h3"])
    }

    func testPoolReplacesConnectionsThatDiedWhileIdle() throws {
        let pool = PGPool(url: db.url, size: 4, setup: db.setup)
        try pool.with { c in try c.execute("CREATE TABLE p (id bigint)") }
        let pids = try (0..<3).map { _ in try pool.with { $0.backendPID } }
        let admin = try db.connect()
        for pid in Set(pids) { try admin.query("SELECT pg_terminate_backend($1::integer)", [.int(Int64(pid))]) }
        // The idle connection is dead; the read runs again on a new one.
        let count = try pool.with { c in try c.queryOne("SELECT count(*) FROM p")!.int(0) }
        XCTAssertEqual(count, 0)

        // Many threads at once never share a connection and never exceed the size.
        let active = Mutex(0), peak = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 32) { i in
            try! pool.with { c in
                let n = active.withLock { $0 += 1; return $0 }
                peak.withLock { $0 = max($0, n) }
                try c.query("INSERT INTO p VALUES ($1)", [.int(Int64(i))])
                active.withLock { $0 -= 1 }
            }
        }
        XCTAssertLessThanOrEqual(peak.withLock { $0 }, 4)
        XCTAssertEqual(try pool.with { try $0.queryOne("SELECT count(*) FROM p")!.int(0) }, 32)
    }

    func testMigrationsRunOnceWhenThreeProcessesStartTogether() throws {
        let migrations: [PGMigrator.Step] = [
            (1, "CREATE TABLE m1 (id bigint); INSERT INTO m1 VALUES (1)"),
            (2, "CREATE TABLE m2 (id bigint); SELECT pg_sleep(0.2)"),
        ]
        let applied = Mutex<[[Int]]>([])
        let failures = Mutex<[String]>([])
        let db = self.db!
        DispatchQueue.concurrentPerform(iterations: 3) { _ in
            do {
                let c = try db.connect()
                let done = try PGMigrator.migrate(c, migrations)
                applied.withLock { $0.append(done) }
            } catch {
                failures.withLock { $0.append(String(describing: error)) }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(applied.withLock { $0 }.sorted { $0.count > $1.count }, [[1, 2], [], []])
        let c = try db.connect()
        XCTAssertEqual(try PGMigrator.version(c), 2)
        XCTAssertEqual(try c.queryOne("SELECT count(*) FROM m1")?.int(0), 1)
        XCTAssertEqual(try PGMigrator.migrate(c, migrations), [])
        XCTAssertThrowsError(try PGMigrator.migrate(c, Array(migrations.prefix(1)))) { e in
            XCTAssertTrue(e is PGMigrator.TooNewError)
        }
    }
}
#endif
