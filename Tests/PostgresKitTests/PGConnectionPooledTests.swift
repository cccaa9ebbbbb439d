#if Postgres
import Foundation
import PostgresKit
import XCTest

/// A connection behind a transaction-mode pooler (`pooled`) keeps nothing in its session:
/// nothing prepared by name, no startup options, its settings made per transaction.
/// (scripts/pg-pgbouncer.sh runs the server through a real pgbouncer.)
final class PGConnectionPooledTests: XCTestCase {
    var db: PGTestDatabase!

    override func setUpWithError() throws { db = try PGTestDatabase.make() }
    override func tearDown() { db?.drop() }

    func testAPooledConnectionPreparesNothingAndMakesItsSettingsPerTransaction() throws {
        let c = try PGConnection(url: db.url, setup: db.setup, transactionSetup: ["SET LOCAL statement_timeout = 1234"],
                                 pooled: true)
        try c.execute("CREATE TABLE p (i bigint)")
        try c.query("INSERT INTO p VALUES ($1)", [.int(1)])
        let inside = try c.transaction { () throws -> String in
            c.later("INSERT INTO p VALUES ($1)", [.int(2)])
            XCTAssertEqual(try c.query("SELECT i FROM p WHERE i >= $1 ORDER BY i", [.int(1)]).count, 2)
            return try c.queryOne("SHOW statement_timeout")?.string(0) ?? ""
        }
        XCTAssertEqual(inside, "1234ms")
        XCTAssertEqual(try c.queryOne("SHOW statement_timeout")?.string(0), "0", "SET LOCAL ends with its transaction")
        XCTAssertEqual(try c.queryOne("SELECT count(*) FROM pg_prepared_statements")?.int(0), 0)
        // No startup options: the session has the server's default, not the direct session's `warning`.
        XCTAssertEqual(try c.queryOne("SHOW client_min_messages")?.string(0), "notice")
        XCTAssertTrue(try c.reachesServerDirectly(), "a pooled connection to PostgreSQL itself still reaches it")

        let d = try db.connect()
        XCTAssertEqual(try d.query("SELECT i FROM p WHERE i = $1", [.int(1)]).count, 1)
        XCTAssertGreaterThan(try d.queryOne("SELECT count(*) FROM pg_prepared_statements")?.int(0) ?? 0, 0)
        XCTAssertEqual(try d.queryOne("SHOW client_min_messages")?.string(0), "warning")
        XCTAssertTrue(try d.reachesServerDirectly())
    }
}
#endif
