#if Postgres
import Foundation
import PostgresKit
import XCTest

/// A schema of its own in the test database named by KIDLEDGER_TEST_DATABASE_URL (the test
/// is skipped when the variable is unset; CI always sets it). Dropped by `drop()`.
struct PGTestDatabase {
    let url: String
    let schema: String

    var setup: [String] { ["SET search_path TO \"\(schema)\""] }

    static func make() throws -> PGTestDatabase {
        guard let url = ProcessInfo.processInfo.environment["KIDLEDGER_TEST_DATABASE_URL"], !url.isEmpty else {
            throw XCTSkip("KIDLEDGER_TEST_DATABASE_URL is not set")
        }
        let schema = "t_" + UUID().uuidString.lowercased().replacingOccurrences(of: "-", with: "").prefix(16)
        let admin = try PGConnection(url: url)
        try admin.execute("CREATE SCHEMA \"\(schema)\"")
        return PGTestDatabase(url: url, schema: String(schema))
    }

    func connect() throws -> PGConnection { try PGConnection(url: url, setup: setup) }

    func drop() {
        if let admin = try? PGConnection(url: url) { try? admin.execute("DROP SCHEMA \"\(schema)\" CASCADE") }
    }
}
#endif
