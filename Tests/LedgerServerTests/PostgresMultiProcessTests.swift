#if Postgres
import Foundation
import Glibc
import LedgerModel
import LedgerServerTesting
import PostgresKit
import XCTest

/// Two real `kidledger-server` processes (the built binary) on ephemeral loopback ports,
/// both serving one throwaway PostgreSQL database: what one process commits, the other
/// sees, wakes for and refuses; concurrent writers through both lose and repeat nothing;
/// a process killed with SIGKILL or a PostgreSQL restart under load loses no acknowledged
/// write and leaves nobody hanging.
///
/// Needs KIDLEDGER_TEST_DATABASE_URL (scripts/test-postgres.sh starts a cluster and sets
/// it); the restart test also needs KIDLEDGER_TEST_PG_CLUSTER, the cluster's folder.
final class PostgresMultiProcessTests: XCTestCase {
    private var adminURL = ""
    private var database = ""
    private var databaseURL = ""
    private var dataDirs: [String] = []
    private var servers: [ServerProcess] = []
    /// The two processes' clients.
    private var a: LoopbackHTTP!
    private var b: LoopbackHTTP!

    override func setUpWithError() throws {
        guard let url = ProcessInfo.processInfo.environment["KIDLEDGER_TEST_DATABASE_URL"], !url.isEmpty else {
            throw XCTSkip("KIDLEDGER_TEST_DATABASE_URL is not set: scripts/test-postgres.sh starts a throwaway PostgreSQL and sets it")
        }
        adminURL = url
        let binary = try ServerProcess.binary()
        database = "mp_" + String(UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(16))
        try PGConnection(url: url).execute("CREATE DATABASE \(database)")
        databaseURL = try Self.url(url, database: database)
        a = LoopbackHTTP(port: try startServer(binary).port)
        b = LoopbackHTTP(port: try startServer(binary).port)
    }

    override func tearDown() {
        if let run = testRun, run.failureCount + run.unexpectedExceptionCount > 0 {
            for (i, s) in servers.enumerated() { print("--- server \(i == 0 ? "A" : "B") (port \(s.port)) log tail:\n\(s.logTail)") }
        }
        for s in servers { s.kill9() }
        servers = []
        for d in dataDirs { try? FileManager.default.removeItem(atPath: d) }
        dataDirs = []
        if !database.isEmpty, let admin = try? PGConnection(url: adminURL) {
            try? admin.execute("DROP DATABASE IF EXISTS \(database) WITH (FORCE)")
        }
    }

    /// A server process on its own data folder (each process keeps its own, as separate
    /// machines would), serving the test's database.
    private func startServer(_ binary: URL) throws -> ServerProcess {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-mp-\(UUID().uuidString)").path
        dataDirs.append(dir)
        let s = try ServerProcess(binary: binary, dataDir: dir,
                                  arguments: ["--database-url", databaseURL, "--log-level", "warning",
                                              "--registrations-per-hour", "0", "--auth-failures-per-minute", "100000"])
        servers.append(s)
        return s
    }

    /// `url` with its database replaced by `database`.
    static func url(_ url: String, database: String) throws -> String {
        guard var c = URLComponents(string: url) else { throw NSError(domain: "not a URL: \(url)", code: 1) }
        c.path = "/" + database
        return c.string!
    }

    // MARK: a) wake-ups cross processes

    /// A write through A wakes a long-poll parked on B; over 50 writes the wake latency
    /// (A's answer to B's answer) has p50 under the issue's 10 ms target (asserted with
    /// head room for a loaded machine, and printed).
    func testAWriteThroughOneProcessWakesALongPollParkedOnTheOther() throws {
        let f = try family(children: 1)
        var token = try headToken(b, f)
        var latencies: [Double] = []
        for i in 0..<50 {
            let poll = Background { [b = b!, token] in
                b.call("GET", "/v1/households/\(f.household)/changes?since=\(token)&wait=10", token: f.token, timeout: 20)
            }
            usleep(30_000) // parked by now
            let id = UUID().lowercased
            let w = a.call("POST", "/v1/households/\(f.household)/children/\(f.children[0])/transactions", token: f.token,
                           json: .obj(["id": .string(id), "amountCents": .int(Int64(i + 1))]))
            let acked = Date()
            XCTAssertEqual(w.status, 201, "write \(i): \(w.failure ?? w.json.serializedString)")
            let (r, answered) = poll.wait()
            XCTAssertEqual(r.status, 200, "long-poll \(i): \(r.failure ?? r.json.serializedString)")
            let ids = (r.json["transactions"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
            XCTAssertEqual(ids, [id], "long-poll \(i) answered with the write")
            guard let next = r.json["nextToken"]?.stringValue else { return XCTFail("no nextToken") }
            token = next
            latencies.append(answered.timeIntervalSince(acked))
        }
        latencies.sort()
        let p50 = latencies[latencies.count / 2], p90 = latencies[latencies.count * 9 / 10]
        print(String(format: "cross-process wake latency over %d writes: p50 %.2f ms, p90 %.2f ms, max %.2f ms",
                     latencies.count, p50 * 1000, p90 * 1000, latencies.last! * 1000))
        XCTAssertLessThan(p50, 0.1, "p50 wake latency \(p50 * 1000) ms (target 10 ms)")
    }

    /// Parked long-polls hold no worker thread or database connection: with more of them
    /// parked on B than B has connections (16), B still answers other requests at once, and
    /// one write through A wakes them all with it.
    func testMoreParkedLongPollsThanConnectionsLeaveTheProcessServing() throws {
        let f = try family(children: 1)
        let token = try headToken(b, f)
        let polls = (0..<40).map { _ in
            Background { [b = b!] in
                b.call("GET", "/v1/households/\(f.household)/changes?since=\(token)&wait=20", token: f.token, timeout: 30)
            }
        }
        usleep(300_000)
        let started = Date()
        let listed = b.call("GET", "/v1/households/\(f.household)/children", token: f.token, timeout: 10)
        XCTAssertEqual(listed.status, 200, listed.failure ?? listed.json.serializedString)
        let child = b.call("POST", "/v1/households/\(f.household)/children", token: f.token, json: .obj(["name": "Cy"]), timeout: 10)
        XCTAssertEqual(child.status, 201, child.failure ?? child.json.serializedString)
        XCTAssertLessThan(Date().timeIntervalSince(started), 2, "B answered while 40 long-polls were parked")
        // B's own write woke them; park them again and wake them from A.
        var next: [Background<TestServer.Reply>] = []
        for p in polls {
            let (r, _) = p.wait()
            XCTAssertEqual(r.status, 200, r.failure ?? r.json.serializedString)
            let since = r.json["nextToken"]?.stringValue ?? ""
            next.append(Background { [b = b!] in
                b.call("GET", "/v1/households/\(f.household)/changes?since=\(since)&wait=20", token: f.token, timeout: 30)
            })
        }
        usleep(300_000)
        let written = a.call("POST", "/v1/households/\(f.household)/children/\(f.children[0])/transactions", token: f.token,
                             json: .obj(["amountCents": 5]), timeout: 10)
        XCTAssertEqual(written.status, 201, written.failure ?? written.json.serializedString)
        let id = written.json["transaction"]?["id"]?.stringValue
        for p in next {
            let (r, _) = p.wait()
            XCTAssertEqual(r.status, 200, r.failure ?? r.json.serializedString)
            XCTAssertEqual(r.json["transactions"]?.arrayValue?.compactMap { $0["id"]?.stringValue }, id.map { [$0] })
        }
    }

    // MARK: b) revocation crosses processes

    /// A token revoked through one process is refused by the other within a second, and a
    /// long-poll it held there is answered 401.
    func testATokenRevokedThroughOneProcessIsRefusedByTheOtherWithinASecond() throws {
        let f = try family(children: 1)
        for (via, other) in [(a!, b!), (b!, a!)] {
            let device = via.call("POST", "/v1/tokens", token: f.token, json: .obj(["deviceName": "tablet"]))
            XCTAssertEqual(device.status, 201)
            guard let id = device.json["id"]?.stringValue, let secret = device.json["secret"]?.stringValue else {
                return XCTFail("no token: \(device.json.serializedString)")
            }
            XCTAssertEqual(other.call("GET", "/v1/me", token: secret).status, 200, "the other process knows the new token")
            let head = try headToken(other, f)
            let poll = Background {
                other.call("GET", "/v1/households/\(f.household)/changes?since=\(head)&wait=20", token: secret, timeout: 30)
            }
            usleep(50_000)
            XCTAssertEqual(via.call("DELETE", "/v1/tokens/\(id)", token: f.token).status, 204)
            let revoked = Date()
            var refused: Date?
            while refused == nil, Date().timeIntervalSince(revoked) < 3 {
                let r = other.call("GET", "/v1/me", token: secret)
                if r.status == 401 { refused = Date() } else { XCTAssertEqual(r.status, 200); usleep(5_000) }
            }
            guard let refused else { return XCTFail("the revoked token is still accepted 3 s later") }
            XCTAssertLessThan(refused.timeIntervalSince(revoked), 1.0)
            let (r, answered) = poll.wait()
            XCTAssertEqual(r.status, 401, "the parked long-poll of the revoked token: \(r.failure ?? r.json.serializedString)")
            XCTAssertLessThan(answered.timeIntervalSince(revoked), 1.0, "the parked long-poll is answered within a second")
            print(String(format: "revocation seen by the other process after %.1f ms, its long-poll answered after %.1f ms",
                         refused.timeIntervalSince(revoked) * 1000, answered.timeIntervalSince(revoked) * 1000))
        }
    }

    // MARK: c) concurrent writers and a paging reader

    /// 16 writers, half through A and half through B, post into one household while a
    /// third client pages the feed with `since` (alternating between the processes) until
    /// it is quiet: every acknowledged transaction appears exactly once, nothing else
    /// does, and every balance is the sum of its child's transactions.
    func testSixteenWritersThroughBothProcessesAndAPagingReaderSeeEveryRecordOnce() throws {
        let f = try family(children: 2)
        let start = try headToken(a, f)
        let writersDone = Flag()
        let seen = Counter()
        let reader = Background { [a = a!, b = b!] in
            var token = start, page = 0, quietAfterDone = false
            while !quietAfterDone {
                let done = writersDone.isSet
                let via = page % 2 == 0 ? a : b
                page += 1
                let r = via.call("GET", "/v1/households/\(f.household)/changes?since=\(token)&limit=25", token: f.token)
                guard r.status == 200, let next = r.json["nextToken"]?.stringValue else {
                    return "page \(page): \(r.status) \(r.failure ?? r.json.serializedString)"
                }
                let txs = r.json["transactions"]?.arrayValue ?? []
                for t in txs { seen.add(t["id"]?.stringValue ?? "?") }
                token = next
                if done && txs.isEmpty && r.json["moreComing"]?.boolValue == false { quietAfterDone = true }
            }
            return "pages: \(page)"
        }
        let load = Load(f, writers: 16, servers: [a, b])
        load.run(for: 2.0)
        writersDone.set()
        let (readerOutcome, _) = reader.wait()
        print("reader \(readerOutcome); \(load.summary)")
        XCTAssertTrue(readerOutcome.hasPrefix("pages:"), readerOutcome)
        XCTAssertEqual(load.unexpected, [], "every write was answered 201")
        XCTAssertGreaterThan(load.acknowledged.count, 50)
        let counts = seen.counts
        XCTAssertEqual(counts.filter { $0.value != 1 }.count, 0, "records seen more than once by the paging reader")
        XCTAssertEqual(Set(counts.keys), Set(load.acknowledged.keys), "the paging reader saw exactly the acknowledged records")
        try verifyLedger(via: b, f, load)
    }

    // MARK: d) kill -9 of one process under load

    /// 16 writers through A and B; A is killed with SIGKILL in the middle. Writers of A
    /// then retry the same write through B (as a load balancer would send them). Every
    /// write acknowledged by either process is there afterwards, exactly once, and B
    /// answered every one of its requests with success throughout.
    func testKillingOneProcessUnderLoadLosesNoAcknowledgedWriteAndTheOtherKeepsServing() throws {
        let f = try family(children: 2)
        let load = Load(f, writers: 16, readers: 2, servers: [a, b], failover: true)
        load.run(for: 3.0) {
            Thread.sleep(forTimeInterval: 1.0)
            self.servers[0].kill9()
        }
        print(load.summary)
        XCTAssertEqual(load.unexpected, [], "answers other than success (or no answer from the killed process)")
        let fromB = load.replies.filter { $0.server == 1 }
        XCTAssertFalse(fromB.isEmpty)
        XCTAssertTrue(fromB.allSatisfy { $0.status == 200 || $0.status == 201 }, "B answered every request with success")
        XCTAssertLessThan(fromB.map(\.seconds).max() ?? 0, 5, "B kept answering promptly")
        XCTAssertTrue(load.replies.contains { $0.server == 0 && $0.status == 0 }, "the load was still running when A died")
        XCTAssertTrue(load.replies.contains { $0.server == 1 && $0.at > load.started.addingTimeInterval(1.2) })
        try verifyLedger(via: b, f, load)
    }

    // MARK: e) PostgreSQL restarted under load

    /// PostgreSQL restarted (`pg_ctl restart -m fast`) while 16 writers post through both
    /// processes: every request is answered within a bounded time, with success or 503
    /// and Retry-After; writers retry 503s with the same id; service resumes without help;
    /// no acknowledged write is lost or doubled; and a client long-polling B across the
    /// restart gets a change written afterwards through A.
    func testPostgresRestartUnderLoadLosesNothingAndServiceResumes() throws {
        let cluster = try Self.clusterDirectory()
        let f = try family(children: 2)
        // A second household only the long-polling client watches.
        let quiet = a.call("POST", "/v1/households", token: f.token, json: .obj(["name": "Quiet"])).json["id"]?.stringValue ?? ""
        let quietChild = a.call("POST", "/v1/households/\(quiet)/children", token: f.token, json: .obj(["name": "Bo"])).json["id"]?.stringValue ?? ""
        let watcherStart = try headToken(b, Family(token: f.token, account: f.account, household: quiet, children: [quietChild]))
        let stopWatching = Flag()
        let watched = Counter()
        let watcher = Background { [b = b!] in
            // A sync loop: long-polls B, follows Retry-After on 503, notes what arrives.
            var token = watcherStart, log: [String] = []
            while !stopWatching.isSet {
                let r = b.call("GET", "/v1/households/\(quiet)/changes?since=\(token)&wait=20", token: f.token, timeout: 30)
                let txs = r.json["transactions"]?.arrayValue ?? []
                log.append(r.status == 0 ? "no answer (\(r.failure!))" : r.status == 200 ? "200 with \(txs.count)" : "\(r.status)")
                switch r.status {
                case 200:
                    for t in txs { watched.add(t["id"]?.stringValue ?? "?") }
                    token = r.json["nextToken"]?.stringValue ?? token
                case 503 where r.header("Retry-After") != nil: usleep(200_000)
                default: return log
                }
            }
            return log
        }
        usleep(100_000)

        // Readiness of B, polled through the restart until it is ready again (its change bus
        // reconnects with a backoff of up to 2 s) or 20 s have passed.
        let loadDone = Flag()
        let readiness = Background { [b = b!] in
            var seen: [Int] = []
            let end = Date().addingTimeInterval(20)
            while Date() < end {
                let r = b.call("GET", "/readyz", timeout: 5)
                if seen.last != r.status { seen.append(r.status) }
                if r.status == 200 && (seen.contains(503) || loadDone.isSet) { break }
                usleep(20_000)
            }
            return seen
        }
        var restartSeconds = 0.0
        let load = Load(f, writers: 16, readers: 2, servers: [a, b], timeout: 15)
        load.run(for: 4.0) {
            Thread.sleep(forTimeInterval: 1.0)
            let t = Date()
            do { try Self.restartPostgres(cluster) } catch { XCTFail("restart: \(error)") }
            restartSeconds = Date().timeIntervalSince(t)
        }
        loadDone.set()
        let (ready, _) = readiness.wait()
        print("B's /readyz through the restart: \(ready)")
        XCTAssertEqual(ready.first, 200)
        XCTAssertTrue(ready.contains(503), "not ready while the database was unreachable")
        XCTAssertEqual(ready.last, 200, "ready again by itself")
        print(String(format: "PostgreSQL restart took %.2f s; ", restartSeconds) + load.summary)
        XCTAssertEqual(load.replies.filter { $0.status == 0 }.map { "\($0.server): \($0.failure ?? "")" }, [], "requests without an answer")
        XCTAssertEqual(load.unexpected, [], "answers other than success or 503 with Retry-After")
        XCTAssertTrue(load.replies.contains { $0.status == 503 }, "the restart was felt (no 503 at all: it was not under load)")
        XCTAssertLessThan(load.replies.map(\.seconds).max() ?? 0, 10, "every request was answered within a bounded time")
        XCTAssertEqual(load.pending, 0, "every write was acknowledged in the end (503s retried with the same id)")
        for server in 0..<2 {
            let last503 = load.replies.filter { $0.server == server && $0.status == 503 }.map(\.at).max()
            if let last503 {
                XCTAssertTrue(load.replies.contains { $0.server == server && $0.at > last503 && $0.status / 100 == 2 },
                              "process \(server) served again after its last 503")
            }
        }
        try verifyLedger(via: b, f, load)

        // The client that long-polled B across the restart gets a change written now through A.
        let id = UUID().lowercased
        let w = a.call("POST", "/v1/households/\(quiet)/children/\(quietChild)/transactions", token: f.token,
                       json: .obj(["id": .string(id), "amountCents": 7]))
        XCTAssertEqual(w.status, 201, w.failure ?? w.json.serializedString)
        let end = Date().addingTimeInterval(3)
        while watched.counts[id] == nil && Date() < end { usleep(5_000) }
        stopWatching.set()
        // Let the watcher's next long-poll end: one more change wakes it.
        _ = a.call("POST", "/v1/households/\(quiet)/children/\(quietChild)/transactions", token: f.token,
                   json: .obj(["id": .string(UUID().lowercased), "amountCents": 1]))
        let (log, _) = watcher.wait()
        print("long-polling client across the restart: \(log.joined(separator: ", "))")
        XCTAssertEqual(watched.counts[id], 1, "the long-polling client got the change written after the restart")
        XCTAssertTrue(log.allSatisfy { $0.hasPrefix("200 with ") || $0 == "503" }, "\(log)")
    }

    /// The database session dies while a write is committing (here: ended from outside
    /// while a deferred trigger holds up its COMMIT): the request is answered 503 with
    /// Retry-After, not 2xx and not never, and its retry with the same id through the other
    /// process stores the transaction exactly once.
    func testASessionLostDuringCommitIsA503AndTheRetryWithTheSameIdIsIdempotent() throws {
        let f = try family(children: 1)
        let admin = try PGConnection(url: databaseURL)
        try admin.execute("""
            CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN IF NEW.amount_cents = 4242 THEN PERFORM pg_sleep(3); END IF; RETURN NULL; END $$;
            CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON transactions DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW EXECUTE FUNCTION slow_commit();
            """)
        let id = UUID().lowercased
        let path = "/v1/households/\(f.household)/children/\(f.children[0])/transactions"
        let write = Background { [a = a!] in
            a.call("POST", path, token: f.token, json: .obj(["id": .string(id), "amountCents": 4242]), timeout: 10)
        }
        var terminated = false
        let end = Date().addingTimeInterval(5)
        while !terminated && Date() < end {
            let pids = try admin.query("""
                SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()
                AND state = 'active' AND query = 'COMMIT'
                """).rows.map { $0.int(0) }
            for pid in pids { terminated = try admin.queryOne("SELECT pg_terminate_backend($1::integer)", [.int(pid)])?.bool(0) ?? false }
            if !terminated { usleep(10_000) }
        }
        XCTAssertTrue(terminated, "the write's COMMIT was seen and its session ended")
        let (r, _) = write.wait()
        XCTAssertEqual(r.status, 503, r.failure ?? r.json.serializedString)
        XCTAssertNotNil(r.header("Retry-After"))
        try admin.execute("DROP TRIGGER slow_commit ON transactions")

        let retry = b.call("POST", path, token: f.token, json: .obj(["id": .string(id), "amountCents": 4242]))
        XCTAssertTrue([200, 201].contains(retry.status), retry.failure ?? retry.json.serializedString)
        print("a session lost during COMMIT: \(r.status) \(r.json["detail"]?.stringValue ?? ""); the retry through the other process: \(retry.status)")
        let again = a.call("POST", path, token: f.token, json: .obj(["id": .string(id), "amountCents": 4242]))
        XCTAssertEqual(again.status, 200)
        XCTAssertEqual(Array(try history(via: a, f).keys), [id])
        XCTAssertEqual(balances(via: b, f)[f.children[0]], 4242)
    }

    // MARK: f) the same request twice at once, through both processes

    /// Concurrent identical POSTs (same id, or same Idempotency-Key) through A and B answer
    /// as one SQLite server answers the same requests one after another: one 201, 200 for
    /// the same content, 409 `id_conflict` for other content; nothing is added twice.
    func testConcurrentIdenticalPostsAnswerAsOneServerWould() throws {
        let f = try family(children: 1)
        let sqlite = try TestServer()
        defer { sqlite.stop() }
        let (_, sqliteToken) = sqlite.signup("mum")
        let sqliteHousehold = sqlite.household(sqliteToken)
        let sqliteChild = sqlite.child(sqliteToken, household: sqliteHousehold)

        var expectedBalance: Int64 = 0
        for round in 0..<12 {
            let keyed = round % 2 == 1
            let conflicting = round % 3 == 2
            let id = UUID().lowercased, key = "key-\(UUID().uuidString)"
            // Four requests, two through each process; with `conflicting`, two carry another amount.
            let amounts: [Int64] = (0..<4).map { conflicting && $0 % 2 == 1 ? 200 + Int64(round) : 100 + Int64(round) }
            @Sendable func send(_ via: LoopbackHTTP, household: String, child: String, token: String, amount: Int64) -> TestServer.Reply {
                via.call("POST", "/v1/households/\(household)/children/\(child)/transactions", token: token,
                         json: keyed ? .obj(["amountCents": .int(amount)]) : .obj(["id": .string(id), "amountCents": .int(amount)]),
                         headers: keyed ? ["Idempotency-Key": key] : [:])
            }
            let replies = concurrently(4) { i, via in
                send(via, household: f.household, child: f.children[0], token: f.token, amount: amounts[i])
            }
            let statuses = replies.map(\.status)
            guard let winner = statuses.firstIndex(of: 201), statuses.filter({ $0 == 201 }).count == 1 else {
                XCTFail("round \(round): one 201 expected, got \(statuses) \(replies.map { $0.failure ?? $0.json.serializedString })")
                continue
            }
            expectedBalance += amounts[winner]
            // The same requests, winner first, one after another on one SQLite server.
            let sqliteId = keyed ? nil : UUID().lowercased
            let order = [winner] + (0..<4).filter { $0 != winner }
            var sqliteStatuses = [Int](repeating: 0, count: 4), sqliteCodes = [String?](repeating: nil, count: 4)
            for i in order {
                let r = sqlite.call("POST", "/v1/households/\(sqliteHousehold)/children/\(sqliteChild)/transactions", token: sqliteToken,
                                    json: sqliteId.map { .obj(["id": .string($0), "amountCents": .int(amounts[i])]) }
                                        ?? .obj(["amountCents": .int(amounts[i])]),
                                    headers: keyed ? ["Idempotency-Key": key] : [:])
                sqliteStatuses[i] = r.status
                sqliteCodes[i] = r.code
            }
            XCTAssertEqual(statuses, sqliteStatuses, "round \(round) (keyed: \(keyed), conflicting: \(conflicting))")
            XCTAssertEqual(replies.map(\.code), sqliteCodes, "round \(round)")
            let ids = Set(replies.filter { $0.status / 100 == 2 }.compactMap { $0.json["transaction"]?["id"]?.stringValue })
            XCTAssertEqual(ids.count, 1, "round \(round): every success names the one transaction")
            if keyed {
                let expected = LedgerIDs.idempotencyID(accountId: LedgerIDs.parse(f.account)!, key: key).lowercased
                XCTAssertEqual(ids.first, expected)
            } else {
                XCTAssertEqual(ids.first, id)
            }
        }
        let balance = b.call("GET", "/v1/households/\(f.household)/children/\(f.children[0])", token: f.token).json["balanceCents"]?.intValue
        XCTAssertEqual(balance, expectedBalance, "nothing was added twice")
        XCTAssertEqual(try history(via: a, f).count, 12)
    }

    /// Concurrent reversals and undo-last of the same transaction through A and B never
    /// make two reversals; concurrent undo-last without an expected id each undo another
    /// transaction; If-Match PATCH races through both processes have exactly one winner.
    func testConcurrentUndoReversalAndIfMatchRacesHaveOneWinner() throws {
        let f = try family(children: 1)
        let child = f.children[0]
        var posted: [String] = []
        for i in 1...6 {
            let r = a.call("POST", "/v1/households/\(f.household)/children/\(child)/transactions", token: f.token,
                           json: .obj(["amountCents": .int(Int64(i * 10))]))
            XCTAssertEqual(r.status, 201)
            posted.append(r.json["transaction"]?["id"]?.stringValue ?? "")
        }
        let t = posted
        @Sendable func reverse(_ via: LoopbackHTTP, _ tx: String) -> TestServer.Reply {
            via.call("POST", "/v1/households/\(f.household)/transactions/\(tx)/reversal", token: f.token)
        }
        @Sendable func undo(_ via: LoopbackHTTP, expected: String?) -> TestServer.Reply {
            via.call("POST", "/v1/households/\(f.household)/children/\(child)/undo-last", token: f.token,
                     json: expected.map { .obj(["expectedTransactionId": .string($0)]) } ?? .obj([:]))
        }
        func reversedIds(_ replies: [TestServer.Reply]) -> [String] {
            replies.filter { $0.status / 100 == 2 }.compactMap { $0.json["transaction"]?["reversesId"]?.stringValue }
        }

        // Four reversals of t6 at once: one 201, three 200 with the same reversal.
        let r1 = concurrently(4) { reverse($1, t[5]) }
        XCTAssertEqual(r1.map(\.status).sorted(), [200, 200, 200, 201], "\(r1.map { $0.failure ?? $0.json.serializedString })")
        let reversalId = LedgerIDs.reversalID(of: LedgerIDs.parse(posted[5])!).lowercased
        XCTAssertEqual(Set(r1.compactMap { $0.json["transaction"]?["id"]?.stringValue }), [reversalId])

        // Four undo-last expecting t5 at once: one 201, three 409 undo_target_changed.
        let r2 = concurrently(4) { undo($1, expected: t[4]) }
        XCTAssertEqual(r2.map(\.status).sorted(), [201, 409, 409, 409], "\(r2.map { $0.failure ?? $0.json.serializedString })")
        XCTAssertEqual(Set(r2.compactMap(\.code)), ["undo_target_changed"])
        XCTAssertEqual(reversedIds(r2), [posted[4]])

        // Reversal of t4 and undo-last expecting t4, two of each at once: one 201 in all.
        let r3 = concurrently(4) { i, via in i % 2 == 0 ? reverse(via, t[3]) : undo(via, expected: t[3]) }
        XCTAssertEqual(r3.filter { $0.status == 201 }.count, 1, "\(r3.map { $0.failure ?? $0.json.serializedString })")
        XCTAssertTrue(r3.allSatisfy { [200, 201, 409].contains($0.status) }, "\(r3.map(\.status))")
        XCTAssertEqual(Set(reversedIds(r3)), [posted[3]])

        // Four undo-last without an expected id: t3, t2 and t1 are undone once each, then nothing is left.
        let r4 = concurrently(4) { undo($1, expected: nil) }
        XCTAssertEqual(r4.map(\.status).sorted(), [201, 201, 201, 422], "\(r4.map { $0.failure ?? $0.json.serializedString })")
        XCTAssertEqual(r4.compactMap(\.code), ["nothing_to_undo"])
        XCTAssertEqual(reversedIds(r4).sorted(), Array(posted[0..<3]).sorted())

        // Every transaction reversed exactly once, by one reversal; the balance is 0.
        let txs = try history(via: b, f)
        let reversals = txs.values.filter { $0["reversesId"]?.stringValue != nil }
        XCTAssertEqual(reversals.count, 6, "one reversal per transaction")
        XCTAssertEqual(Set(reversals.compactMap { $0["reversesId"]?.stringValue }), Set(posted))
        XCTAssertEqual(balances(via: b, f)[child], 0)

        // If-Match races on a child and on the household: one 200, the rest 412 with the winner's version.
        for round in 0..<4 {
            let path = round % 2 == 0 ? "/v1/households/\(f.household)/children/\(child)" : "/v1/households/\(f.household)"
            let tag = a.call("GET", path, token: f.token).header("ETag") ?? ""
            XCTAssertFalse(tag.isEmpty)
            let r = concurrently(4) { i, via in
                via.call("PATCH", path, token: f.token, json: .obj(["name": .string("Name \(round)-\(i)")]),
                                                headers: ["If-Match": tag])
            }
            XCTAssertEqual(r.map(\.status).sorted(), [200, 412, 412, 412], "round \(round): \(r.map { $0.failure ?? $0.json.serializedString })")
            guard let winner = r.first(where: { $0.status == 200 })?.json["name"]?.stringValue else { continue }
            for lost in r where lost.status == 412 {
                XCTAssertEqual(lost.code, "precondition_failed")
                XCTAssertEqual(lost.json["current"]?["name"]?.stringValue, winner, "a 412 carries the winner's version")
            }
            XCTAssertEqual(b.call("GET", path, token: f.token).json["name"]?.stringValue, winner)
        }
    }

    // MARK: fixtures

    struct Family {
        let token: String
        let account: String
        let household: String
        let children: [String]
    }

    /// An account, a household and `children` children, created through A.
    private func family(children: Int) throws -> Family {
        let s = a.call("POST", "/v1/accounts", json: .obj(["handle": .string("mum\(Int.random(in: 1000...9999))"), "displayName": "Mum"]))
        guard s.status == 201, let token = s.json["token"]?["secret"]?.stringValue, let account = s.json["account"]?["id"]?.stringValue else {
            throw NSError(domain: "signup: \(s.status) \(s.failure ?? s.json.serializedString)", code: 1)
        }
        let h = a.call("POST", "/v1/households", token: token, json: .obj(["name": "Home"])).json["id"]?.stringValue ?? ""
        let kids = (0..<children).map { i in
            a.call("POST", "/v1/households/\(h)/children", token: token, json: .obj(["name": .string("Kid \(i)")])).json["id"]?.stringValue ?? ""
        }
        return Family(token: token, account: account, household: h, children: kids)
    }

    /// The household's current sync token, read through `via`.
    private func headToken(_ via: LoopbackHTTP, _ f: Family) throws -> String {
        var token: String?
        while true {
            let r = via.call("GET", "/v1/households/\(f.household)/changes?limit=1000" + (token.map { "&since=\($0)" } ?? ""), token: f.token)
            guard r.status == 200, let next = r.json["nextToken"]?.stringValue else {
                throw NSError(domain: "changes: \(r.status) \(r.failure ?? r.json.serializedString)", code: 1)
            }
            token = next
            if r.json["moreComing"]?.boolValue != true { return next }
        }
    }

    /// The household's whole history, read through `via` (its cursors belong to that
    /// process), by id; an id listed twice fails the test.
    private func history(via: LoopbackHTTP, _ f: Family) throws -> [String: JSONValue] {
        var txs: [String: JSONValue] = [:]
        var cursor: String?
        repeat {
            let r = via.call("GET", "/v1/households/\(f.household)/transactions?limit=1000" + (cursor.map { "&cursor=\($0)" } ?? ""),
                             token: f.token)
            guard r.status == 200 else { throw NSError(domain: "history: \(r.status) \(r.failure ?? r.json.serializedString)", code: 1) }
            for t in r.json["items"]?.arrayValue ?? [] {
                let id = t["id"]?.stringValue ?? "?"
                XCTAssertNil(txs[id], "transaction \(id) listed twice")
                txs[id] = t
            }
            cursor = r.json["nextCursor"]?.stringValue
        } while cursor != nil
        return txs
    }

    /// Each child's balance as GET …/children lists it.
    private func balances(via: LoopbackHTTP, _ f: Family) -> [String: Int64] {
        let listed = via.call("GET", "/v1/households/\(f.household)/children", token: f.token).json["items"]?.arrayValue ?? []
        var out: [String: Int64] = [:]
        for c in listed { out[c["id"]?.stringValue ?? "?"] = c["balanceCents"]?.intValue }
        return out
    }

    /// Every acknowledged write is in the history with its amount and child, nothing there
    /// was never sent, and each child's balance is the sum of its transactions.
    private func verifyLedger(via: LoopbackHTTP, _ f: Family, _ load: Load) throws {
        let txs = try history(via: via, f)
        let acknowledged = load.acknowledged
        let missing = acknowledged.keys.filter { txs[$0] == nil }
        XCTAssertEqual(missing, [], "acknowledged writes missing")
        for (id, w) in acknowledged {
            XCTAssertEqual(txs[id]?["amountCents"]?.intValue, w.amount, "amount of \(id)")
            XCTAssertEqual(txs[id]?["childId"]?.stringValue, w.child, "child of \(id)")
        }
        let attempted = load.attempted
        XCTAssertEqual(txs.keys.filter { !attempted.contains($0) }, [], "transactions nobody sent")
        let balances = balances(via: via, f)
        for c in f.children {
            let sum = txs.values.filter { $0["childId"]?.stringValue == c }.reduce(Int64(0)) { $0 + ($1["amountCents"]?.intValue ?? 0) }
            XCTAssertEqual(balances[c], sum, "balance of \(c)")
        }
    }

    /// Runs `count` requests at once (each on a thread of its own, released together), the
    /// first half through A, the rest through B.
    private func concurrently(_ count: Int, _ body: @escaping @Sendable (Int, LoopbackHTTP) -> TestServer.Reply) -> [TestServer.Reply] {
        let gate = DispatchSemaphore(value: 0)
        let calls = (0..<count).map { i in
            let via: LoopbackHTTP = i < count / 2 ? a : b
            return Background { gate.wait(); return body(i, via) }
        }
        usleep(10_000)
        for _ in 0..<count { gate.signal() }
        return calls.map { $0.wait().0 }
    }

    // MARK: the cluster

    static func clusterDirectory() throws -> String {
        guard let dir = ProcessInfo.processInfo.environment["KIDLEDGER_TEST_PG_CLUSTER"], !dir.isEmpty else {
            throw XCTSkip("KIDLEDGER_TEST_PG_CLUSTER is not set: scripts/test-postgres.sh sets it to the throwaway cluster's folder")
        }
        return dir
    }

    /// `pg_ctl restart -m fast` of the throwaway cluster (as its owner when running as root).
    static func restartPostgres(_ dir: String) throws {
        guard let pgCtl = ["15", "16", "17", "14"].map({ "/usr/lib/postgresql/\($0)/bin/pg_ctl" })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else {
            throw NSError(domain: "pg_ctl not found", code: 1)
        }
        let args = [pgCtl, "-D", dir + "/data", "-l", dir + "/server.log", "-m", "fast", "-w", "-t", "60", "restart"]
        // posix_spawn and waitpid rather than Process: Foundation's Process sometimes never
        // sees this child exit (it stays a zombie and waitUntilExit never returns).
        let argv = getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + args : args
        var cArgs = argv.map { strdup($0) }
        defer { cArgs.forEach { free($0) } }
        cArgs.append(nil)
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var pid: pid_t = 0
        let rc = posix_spawn(&pid, argv[0], &actions, nil, cArgs, environ)
        guard rc == 0 else { throw NSError(domain: "cannot run \(argv[0]): \(String(cString: strerror(rc)))", code: 1) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else { throw NSError(domain: "pg_ctl restart exited with status \(status)", code: 1) }
    }
}

/// Writers posting transactions into one household through several server processes.
/// Each writer sends through `servers[i % count]`; it retries a write with the same id
/// (or the same Idempotency-Key) after a 503 and, with `failover`, through the next
/// process after no answer. Odd writers use Idempotency-Key instead of an id.
private final class Load: @unchecked Sendable {
    struct Reply {
        let server: Int
        /// A write (POST transaction); else a read (GET children or history).
        let write: Bool
        let status: Int
        let seconds: Double
        let at: Date
        let failure: String?
        let code: String?
        let retryAfter: Bool
    }
    struct Write { let child: String; let amount: Int64 }

    private let family: PostgresMultiProcessTests.Family
    private let writers: Int
    private let readers: Int
    private let servers: [LoopbackHTTP]
    private let failover: Bool
    private let timeout: Double
    private let lock = NSLock()
    private var _replies: [Reply] = []
    private var _acknowledged: [String: Write] = [:]
    private var _attempted: Set<String> = []
    private var _unexpected: [String] = []
    private var _pending = 0
    private(set) var started = Date()

    init(_ family: PostgresMultiProcessTests.Family, writers: Int, readers: Int = 0, servers: [LoopbackHTTP],
         failover: Bool = false, timeout: Double = 10) {
        self.family = family
        self.writers = writers
        self.readers = readers
        self.servers = servers
        self.failover = failover
        self.timeout = timeout
    }

    fileprivate func record(_ reply: Reply) { lock.withLock { _replies.append(reply) } }
    fileprivate func refuse(_ what: String) { lock.withLock { _unexpected.append(what) } }

    var replies: [Reply] { lock.withLock { _replies } }
    var acknowledged: [String: Write] { lock.withLock { _acknowledged } }
    var attempted: Set<String> { lock.withLock { _attempted } }
    var unexpected: [String] { lock.withLock { _unexpected } }
    /// Writes still unacknowledged when the run ended.
    var pending: Int { lock.withLock { _pending } }

    var summary: String {
        let r = replies
        func statuses(_ write: Bool) -> String {
            var by: [Int: Int] = [:]
            for x in r where x.write == write { by[x.status, default: 0] += 1 }
            return by.sorted { $0.key < $1.key }.map { "\($0.value)×\($0.key == 0 ? "no answer" : String($0.key))" }.joined(separator: " ")
        }
        return "\(writers) writers: \(acknowledged.count) writes acknowledged, answers \(statuses(true))"
            + (readers > 0 ? "; \(readers) readers: answers \(statuses(false))" : "")
            + String(format: "; slowest answer %.2f s", r.map(\.seconds).max() ?? 0)
    }

    /// Writes for `seconds` (then finishes the write each writer has started, retrying for
    /// up to 15 s more), running `during` on the calling thread meanwhile.
    func run(for seconds: Double, during: () -> Void = {}) {
        started = Date()
        let end = started.addingTimeInterval(seconds)
        let group = DispatchGroup()
        for w in 0..<writers {
            group.enter()
            Thread.detachNewThread { [self] in
                defer { group.leave() }
                writer(w, until: end)
            }
        }
        for r in 0..<readers {
            group.enter()
            Thread.detachNewThread { [self] in
                defer { group.leave() }
                reader(r, until: end)
            }
        }
        during()
        group.wait()
    }

    private func writer(_ w: Int, until end: Date) {
        var server = w % servers.count
        let keyed = w % 2 == 1
        let giveUp = end.addingTimeInterval(15)
        while Date() < end {
            let child = family.children[w % family.children.count]
            let amount = Int64.random(in: 1...1000)
            let id = UUID().lowercased, key = "w\(w)-\(UUID().uuidString)"
            let expectedId = keyed ? LedgerIDs.idempotencyID(accountId: LedgerIDs.parse(family.account)!, key: key).lowercased : id
            lock.withLock { _ = _attempted.insert(expectedId); _pending += 1 }
            var done = false
            while !done && Date() < giveUp {
                let t = Date()
                let r = servers[server].call("POST", "/v1/households/\(family.household)/children/\(child)/transactions",
                                             token: family.token,
                                             json: keyed ? .obj(["amountCents": .int(amount)]) : .obj(["id": .string(id), "amountCents": .int(amount)]),
                                             headers: keyed ? ["Idempotency-Key": key] : [:], timeout: timeout)
                let reply = Reply(server: server, write: true, status: r.status, seconds: Date().timeIntervalSince(t), at: Date(),
                                  failure: r.failure, code: r.code, retryAfter: r.header("Retry-After") != nil)
                record(reply)
                switch r.status {
                case 200, 201:
                    let got = r.json["transaction"]?["id"]?.stringValue
                    lock.withLock {
                        if got != expectedId { _unexpected.append("\(r.status) for \(expectedId) names \(got ?? "nothing")") }
                        _acknowledged[expectedId] = Write(child: child, amount: amount)
                        _pending -= 1
                    }
                    done = true
                case 503 where reply.retryAfter:
                    usleep(100_000)
                case 0 where failover:
                    server = (server + 1) % servers.count
                case 0:
                    usleep(100_000)
                default:
                    lock.withLock {
                        _unexpected.append("\(r.status) \(r.code ?? "") from \(server == 0 ? "A" : "B")"
                                           + (r.status == 503 ? " without Retry-After" : ""))
                    }
                    usleep(100_000)
                }
            }
        }
    }
}

extension Load {
    /// Reads the children and a history page through `servers[r % count]` until `end`:
    /// each answer must be 200, or 503 with Retry-After.
    fileprivate func reader(_ r: Int, until end: Date) {
        var server = r % servers.count
        var i = 0
        while Date() < end {
            i += 1
            let path = i % 2 == 0 ? "/v1/households/\(family.household)/children" : "/v1/households/\(family.household)/transactions?limit=20"
            let t = Date()
            let x = servers[server].call("GET", path, token: family.token, timeout: timeout)
            record(Reply(server: server, write: false, status: x.status, seconds: Date().timeIntervalSince(t), at: Date(),
                         failure: x.failure, code: x.code, retryAfter: x.header("Retry-After") != nil))
            if x.status == 503 && x.header("Retry-After") != nil { usleep(100_000); continue }
            if x.status == 0 && failover { server = (server + 1) % servers.count; continue }
            if x.status != 200 { refuse("read \(x.status) \(x.code ?? x.failure ?? "") from \(server == 0 ? "A" : "B")") }
            usleep(20_000)
        }
    }
}

/// A value computed on a thread of its own; `wait()` returns it with the time it was ready.
private final class Background<T>: @unchecked Sendable {
    private var value: T?
    private var finished = Date()
    private let done = DispatchSemaphore(value: 0)

    init(_ body: @escaping @Sendable () -> T) {
        Thread.detachNewThread { [self] in
            value = body()
            finished = Date()
            done.signal()
        }
    }

    func wait() -> (T, Date) {
        done.wait()
        done.signal()
        return (value!, finished)
    }
}

/// A flag set once, read from any thread.
private final class Flag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

/// How many times each id was seen.
private final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [String: Int] = [:]
    func add(_ id: String) { lock.withLock { seen[id, default: 0] += 1 } }
    var counts: [String: Int] { lock.withLock { seen } }
}
#endif
