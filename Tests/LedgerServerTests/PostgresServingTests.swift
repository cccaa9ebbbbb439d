#if Postgres
import Foundation
import LedgerModel
import LedgerServerTesting
import PostgresKit
import Synchronization
import XCTest
@testable import LedgerServer

/// One server over PostgreSQL: the event loops never wait for the database, and a database
/// that cannot be reached is 503 with Retry-After (never a hang), `/readyz` says so, and
/// service comes back by itself.
final class PostgresServingTests: XCTestCase {
    private var url = ""

    override func setUpWithError() throws {
        guard let u = TestServer.postgresURL else { throw XCTSkip("KIDLEDGER_TEST_DATABASE_URL is not set") }
        url = u
    }

    /// Requests waiting for the database hold workers, not the event loop: while another
    /// session holds the children table locked, a read and a write of it wait, and with one
    /// event loop /healthz and a read of another table are answered meanwhile.
    func testRequestsWaitingForTheDatabaseDoNotStallTheEventLoop() throws {
        let s = try TestServer { c in
            c.http.eventLoops = 1
            c.databaseConnections = 4
        }
        defer { s.stop() }
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let c = s.child(t, household: h)
        let blocker = try PGConnection(url: s.app.configuration.databaseURL!)
        try blocker.execute("BEGIN; LOCK TABLE children IN ACCESS EXCLUSIVE MODE")
        let done = DispatchGroup()
        let statuses = Mutex<[Int]>([])
        for (method, path) in [("GET", "/v1/households/\(h)/children"), ("POST", "/v1/households/\(h)/children/\(c)/transactions")] {
            done.enter()
            DispatchQueue.global().async {
                let r = s.call(method, path, token: t, json: method == "POST" ? .obj(["amountCents": 5]) : nil)
                statuses.withLock { $0.append(r.status) }
                done.leave()
            }
        }
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(done.wait(timeout: .now()), .timedOut, "both wait for the lock")
        // Answered while the others wait (on the loop they would wait for the lock too).
        XCTAssertEqual(s.call("GET", "/healthz", timeout: 3).status, 200)
        XCTAssertEqual(s.call("GET", "/v1/households", token: t, timeout: 3).status, 200)
        try blocker.execute("COMMIT")
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(statuses.withLock { $0 }.sorted(), [200, 201])
    }

    /// PostgreSQL refusing every connection (and the server's sessions ended): requests are
    /// 503 with Retry-After within a bounded time, /readyz is 503; once connections are
    /// allowed again the server serves without a restart, and a write retried with its id
    /// is stored once.
    func testAnUnreachableDatabaseIs503AndServiceResumesByItself() throws {
        let s = try TestServer()
        defer { s.stop() }
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let c = s.child(t, household: h)
        let path = "/v1/households/\(h)/children/\(c)/transactions"
        XCTAssertEqual(s.call("GET", "/readyz").status, 200)

        guard var parts = URLComponents(string: url), parts.path.count > 1 else { return XCTFail("no database in \(url)") }
        let database = String(parts.path.dropFirst())
        parts.path = "/postgres"
        let admin = try PGConnection(url: parts.string!)
        let quoted = admin.quoteIdentifier(database)
        try admin.execute("ALTER DATABASE \(quoted) ALLOW_CONNECTIONS false")
        var allowed = false
        defer { if !allowed { try? admin.execute("ALTER DATABASE \(quoted) ALLOW_CONNECTIONS true") } }
        try admin.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()",
                        [.text(database)])

        let id = UUID().uuidString.lowercased()
        let started = Date()
        let write = s.call("POST", path, token: t, json: .obj(["id": .string(id), "amountCents": 7]), timeout: 20)
        XCTAssertEqual(write.status, 503, String(decoding: write.body, as: UTF8.self))
        XCTAssertNotNil(write.header("Retry-After"))
        let read = s.call("GET", "/v1/households/\(h)/children", token: t, timeout: 20)
        XCTAssertEqual(read.status, 503)
        XCTAssertNotNil(read.header("Retry-After"))
        XCTAssertLessThan(Date().timeIntervalSince(started), 12, "bounded, never a hang")
        let notReady = s.call("GET", "/readyz", timeout: 10)
        XCTAssertEqual(notReady.status, 503)
        XCTAssertEqual(notReady.code, "not_ready")
        XCTAssertEqual(s.call("GET", "/healthz").status, 200, "alive, only not ready")

        try admin.execute("ALTER DATABASE \(quoted) ALLOW_CONNECTIONS true")
        allowed = true
        let deadline = Date().addingTimeInterval(15)
        while s.call("GET", "/readyz", timeout: 5).status != 200 && Date() < deadline { Thread.sleep(forTimeInterval: 0.1) }
        XCTAssertEqual(s.call("GET", "/readyz").status, 200, "ready again without a restart")
        let retried = s.call("POST", path, token: t, json: .obj(["id": .string(id), "amountCents": 7]))
        XCTAssertEqual(retried.status, 201, "the refused write was not stored")
        XCTAssertEqual(s.call("POST", path, token: t, json: .obj(["id": .string(id), "amountCents": 7])).status, 200)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(c)", token: t).json["balanceCents"]?.intValue, 7)
        XCTAssertEqual(try s.check().problems, [])
    }
}
#endif
