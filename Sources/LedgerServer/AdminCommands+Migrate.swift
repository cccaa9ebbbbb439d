import Foundation
#if Postgres
import LedgerStoragePostgres
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
        let (applied, version) = try PostgresMaintenance.migrate(url: databaseURL)
        return #"{"event":"migrate","applied":[\#(applied.map(String.init).joined(separator: ","))],"version":\#(version)}"#
        #else
        throw Failure(description: noPostgresSupport)
        #endif
    }
}
