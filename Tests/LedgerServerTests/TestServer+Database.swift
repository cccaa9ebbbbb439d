import Foundation
import LedgerModel
import LedgerServerTesting
import SQLiteKit
import XCTest
@testable import LedgerServer
@testable import LedgerStorageSQLite
#if Postgres
import PostgresKit
#endif

/// What tests reach under the storage seam and the HTTP layer for.
extension TestServer {
    /// Skips the calling test when the servers run over PostgreSQL.
    static func requireSQLite(_ reason: String) throws {
        if postgresURL != nil { throw XCTSkip("SQLite only: \(reason)") }
    }

    /// Runs one statement straight in the server's database, outside its request path (to
    /// set up states no request can make). Written for SQLite with `?` placeholders; over
    /// PostgreSQL `postgres` is run instead when given (else the same text, `?` numbered as
    /// `$1`…), with integer parameters as bigint, UUIDs as uuid and other text as text.
    func execute(_ sql: String, _ params: [SQLiteValue] = [], postgres: String? = nil) throws {
        _ = try int(sql, params, postgres: postgres)
    }

    /// Like `execute`, answering the first column of the first row as an integer (0 when none).
    func int(_ sql: String, _ params: [SQLiteValue] = [], postgres: String? = nil) throws -> Int64 {
        #if Postgres
        if let url = app.configuration.databaseURL {
            var text = postgres ?? sql, n = 0
            if postgres == nil {
                while let q = text.firstIndex(of: "?") { n += 1; text.replaceSubrange(q...q, with: "$\(n)") }
            }
            let values: [PGValue] = params.map {
                switch $0 {
                case .integer(let i): return .int(i)
                case .text(let t): return LedgerIDs.parse(t) == nil ? .text(t) : .uuid(t)
                case .real(let r): return .text(String(r))
                case .blob(let b): return .bytes(b)
                case .null: return .null
                }
            }
            let rows = try PGConnection(url: url).query(text, values).rows
            return rows.first.map { $0.isNull(0) ? 0 : $0.int(0) } ?? 0
        }
        #endif
        return try app.sqliteWriter.sync { db in try db.query(sql, params).first.map { $0.int(0) } ?? 0 }
    }

    /// `kidledger-server check` on this server's database.
    func check() throws -> AdminCommands.CheckReport { try AdminCommands.check(app.configuration) }
}

extension LedgerApp {
    /// The SQLite writer, for tests that reach under the storage seam (SQLite only; a test
    /// that calls it over PostgreSQL skips before).
    var sqliteWriter: WriteQueue {
        guard let sqlite = services.storage as? SQLiteLedgerStorage else { fatalError("this test needs the SQLite backend") }
        return sqlite.writer
    }
}
