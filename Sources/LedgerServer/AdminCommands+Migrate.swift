import Foundation
#if Postgres
import PostgresKit
#endif

extension AdminCommands {
    /// Whether this build has the PostgreSQL backend (the `Postgres` package trait).
    public static var hasPostgres: Bool {
        #if Postgres
        return true
        #else
        return false
        #endif
    }

    /// What a build without the `Postgres` trait answers to a database URL.
    static let noPostgresSupport = "this build has no PostgreSQL support; build it with `swift build -c release --traits Postgres` "
        + "(or use SQLite: leave out --database-url and KIDLEDGER_DATABASE_URL)"

    /// `kidledger-server migrate`: applies the PostgreSQL schema's migrations once (safe while
    /// other processes start or run) and answers `{"event":"migrate","applied":[…],"version":N}`.
    public static func migrate(databaseURL: String) throws -> String {
        #if Postgres
        guard databaseURL.hasPrefix("postgres://") || databaseURL.hasPrefix("postgresql://") else {
            throw Failure(description: "--database-url must be a postgres:// URL")
        }
        do {
            let db = try PGConnection(url: databaseURL)
            let applied = try PostgresSchema.migrate(db)
            let version = try PGMigrator.version(db)
            return #"{"event":"migrate","applied":[\#(applied.map(String.init).joined(separator: ","))],"version":\#(version)}"#
        } catch let e as PGError {
            throw Failure(description: "PostgreSQL: \(e.message)")
        }
        #else
        throw Failure(description: noPostgresSupport)
        #endif
    }
}
