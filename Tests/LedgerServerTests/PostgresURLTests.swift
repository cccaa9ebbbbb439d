#if Postgres
import XCTest
@testable import LedgerStoragePostgres

/// What the server says about database URLs: passwords never shown, also in multi-host URLs
/// (a primary and its standbys); a pooler where PostgreSQL itself is needed is refused with
/// the flag to set.
final class PostgresURLTests: XCTestCase {
    func testPasswordsAreRedactedInSingleAndMultiHostURLs() {
        XCTAssertEqual(PostgresLedgerStorage.redacted("postgres://kid:s3cret@db.internal:5432/kidledger"),
                       "postgres://kid:***@db.internal:5432/kidledger")
        XCTAssertEqual(PostgresLedgerStorage.redacted(
            "postgres://kid:s3cret@db1:5432,db2:5432/kidledger?target_session_attrs=read-write"),
            "postgres://kid:***@db1:5432,db2:5432/kidledger?target_session_attrs=read-write")
        XCTAssertEqual(PostgresLedgerStorage.redacted("postgres://kid@db1,db2/kidledger"), "postgres://kid@db1,db2/kidledger")
        XCTAssertNil(PostgresLedgerStorage.urlProblem("postgres://kid@db1:5432,db2:5433/kidledger?target_session_attrs=read-write"))
    }

    func testAPoolerWherePostgreSQLItselfIsNeededIsRefusedWithTheFlagToSet() {
        let alone = PostgresLedgerStorage.poolerRefusal(url: "postgres://kid:pw@bouncer:6432/kidledger", direct: false)
        XCTAssertTrue(alone.hasPrefix("--database-url postgres://kid:***@bouncer:6432/kidledger reaches a connection pooler"), alone)
        XCTAssertTrue(alone.contains("as --database-direct-url"), alone)
        XCTAssertFalse(alone.contains("pw"), alone)
        let direct = PostgresLedgerStorage.poolerRefusal(url: "postgres://kid@bouncer:6432/kidledger", direct: true)
        XCTAssertTrue(direct.hasPrefix("--database-direct-url postgres://kid@bouncer:6432/kidledger reaches a connection pooler"), direct)
    }
}
#endif
