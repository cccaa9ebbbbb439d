import Foundation
import XCTest
@testable import LedgerServer
#if Postgres
@testable import LedgerStoragePostgres
import PostgresKit
#endif

/// `kidledger-server migrate`.
final class MigrateCommandTests: XCTestCase {
    #if Postgres
    func testMigratesOnceThenFindsNothingToDo() throws {
        guard let url = ProcessInfo.processInfo.environment["KIDLEDGER_TEST_DATABASE_URL"], !url.isEmpty else {
            throw XCTSkip("KIDLEDGER_TEST_DATABASE_URL is not set")
        }
        XCTAssertTrue(AdminCommands.hasPostgres)
        let schema = "mig_" + String(UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(16))
        let admin = try PGConnection(url: url)
        try admin.execute("CREATE SCHEMA \(schema)")
        defer { try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
        let scoped = url + (url.contains("?") ? "&" : "?") + "options=-csearch_path%3D\(schema)"
        let versions = PostgresSchema.migrations.map(\.version)
        let all = versions.map(String.init).joined(separator: ","), newest = versions.max() ?? 0
        XCTAssertEqual(try AdminCommands.migrate(databaseURL: scoped), #"{"event":"migrate","applied":[\#(all)],"version":\#(newest)}"#)
        XCTAssertEqual(try AdminCommands.migrate(databaseURL: scoped), #"{"event":"migrate","applied":[],"version":\#(newest)}"#)
        XCTAssertThrowsError(try AdminCommands.migrate(databaseURL: "/var/lib/kidledger")) { e in
            XCTAssertTrue(String(describing: e).contains("postgres://"))
        }
    }
    #else
    func testWithoutTheTraitSaysHowToBuildIt() {
        XCTAssertFalse(AdminCommands.hasPostgres)
        XCTAssertThrowsError(try AdminCommands.migrate(databaseURL: "postgres://localhost/kidledger")) { e in
            XCTAssertTrue(String(describing: e).contains("--traits Postgres"), "\(e)")
        }
    }
    #endif
}
