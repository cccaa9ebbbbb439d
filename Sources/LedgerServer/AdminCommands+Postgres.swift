import Foundation
import LedgerModel
#if Postgres
import LedgerStoragePostgres
#endif

extension AdminCommands {
    /// What `backup` answers for a PostgreSQL database: it is backed up with PostgreSQL's
    /// own tools, and the keys in the data folder with it.
    static func postgresBackupAdvice(_ configuration: LedgerAppConfiguration) -> String {
        "backup copies SQLite databases only; back PostgreSQL up with its own tools, e.g. "
            + "`pg_dump --format=custom --file kidledger.dump \"$KIDLEDGER_DATABASE_URL\"` "
            + "(a consistent snapshot while the servers run; restore with pg_restore into an empty database, "
            + "then run `kidledger-server check --database-url …`), or continuous archiving for point-in-time recovery. "
            + "Keep \(configuration.dataDirectory)/cursor.key and \(configuration.dataDirectory)/entitlement-keys/ with it"
    }

    /// `check` over PostgreSQL: the schema version, every cached balance against its
    /// ledger sum, each row's reserved reversal id, and every reversal against its target.
    /// (Foreign keys and types are the database's own constraints.)
    static func checkPostgres(url: String) -> CheckReport {
        #if Postgres
        return PostgresMaintenance.check(url: url)
        #else
        return CheckReport(problems: ["database: " + noPostgresSupport], children: 0, transactions: 0)
        #endif
    }
}
