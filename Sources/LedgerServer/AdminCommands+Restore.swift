import Foundation
import LedgerModel
import LedgerStorageSQLite
#if Postgres
import LedgerStoragePostgres
#endif

extension AdminCommands {
    /// `kidledger-server restore --from FILE` (SQLite): installs the backup as the data
    /// folder's database with a new incarnation (`SQLiteMaintenance.restore`); answers
    /// `{"event":"restore","from":…,"replaced":…|null,"incarnation":"…","children":N,"transactions":N}`.
    public static func restore(_ configuration: LedgerAppConfiguration, from backup: String) throws -> String {
        if configuration.databaseURL != nil {
            throw Failure(description: "restore installs SQLite backups; over PostgreSQL restore with pg_restore (or recover, or promote "
                          + "a standby), then run `kidledger-server rewound --database-url …`")
        }
        let file = URL(fileURLWithPath: configuration.databasePath).lastPathComponent
        let outcome = try SQLiteMaintenance.restore(from: backup, directory: configuration.dataDirectory, databaseFile: file,
                                                    cacheBytes: configuration.writerCacheBytes, now: Timestamp.nowMs())
        return JSONValue.object([
            "event": .string("restore"), "from": .string(backup), "replaced": outcome.replaced.map(JSONValue.string) ?? .null,
            "incarnation": .string(String(outcome.incarnation)), "children": .int(Int64(outcome.children)),
            "transactions": .int(Int64(outcome.transactions)),
        ]).serializedString
    }

    /// `kidledger-server rewound`: gives the database a new incarnation after it went back in
    /// time by other means than `restore` (pg_restore, point-in-time recovery, a failover to
    /// an asynchronous standby, a backup copied by hand); answers `{"event":"rewound","incarnation":"…"}`.
    public static func rewound(_ configuration: LedgerAppConfiguration) throws -> String {
        let incarnation: Int64
        if let url = configuration.databaseURL {
            #if Postgres
            incarnation = try PostgresMaintenance.rewound(url: url)
            #else
            throw Failure(description: noPostgresSupport)
            #endif
        } else {
            if let missing = missingDatabase(configuration) { throw Failure(description: missing) }
            incarnation = try SQLiteMaintenance.rewound(path: configuration.databasePath, cacheBytes: configuration.writerCacheBytes,
                                                        now: Timestamp.nowMs())
        }
        return JSONValue.object(["event": .string("rewound"), "incarnation": .string(String(incarnation))]).serializedString
    }
}
