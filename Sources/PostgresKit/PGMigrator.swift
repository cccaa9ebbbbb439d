#if Postgres
/// Applies forward migrations exactly once, even when several processes start at the same
/// moment: each takes a session advisory lock first, so one applies them and the others
/// then find nothing left to do.
public enum PGMigrator {
    /// One forward migration: its version and the statements that take the schema there.
    public typealias Step = (version: Int, sql: String)

    /// The database was migrated by a newer build (its version, the newest this build knows).
    public struct TooNewError: Error, CustomStringConvertible {
        public var versions: (database: Int, known: Int)
        public var description: String {
            "the database has schema version \(versions.database); this build knows up to \(versions.known)"
        }
    }

    /// The advisory lock key every kidledger process takes while migrating.
    public static let defaultLockKey: Int64 = 0x6B69_646C_6564_6772 // "kidledgr"

    /// The current schema version (0 before the first migration).
    public static func version(_ db: PGConnection) throws -> Int {
        let exists = try db.queryOne("SELECT to_regclass('schema_version') IS NOT NULL")!.bool(0)
        guard exists else { return 0 }
        return Int(try db.queryOne("SELECT COALESCE(MAX(version), 0)::bigint FROM schema_version")!.int(0))
    }

    /// Applies every migration above the current version, each in its own transaction,
    /// under the advisory lock `lockKey`.
    /// - Returns: the versions this call applied.
    @discardableResult
    public static func migrate(_ db: PGConnection, _ migrations: [Step],
                               lockKey: Int64 = defaultLockKey) throws -> [Int] {
        let sorted = migrations.sorted { $0.version < $1.version }
        try db.query("SELECT pg_advisory_lock($1)", [.int(lockKey)])
        defer { _ = try? db.query("SELECT pg_advisory_unlock($1)", [.int(lockKey)]) }
        try db.execute("""
            CREATE TABLE IF NOT EXISTS schema_version (
                version integer PRIMARY KEY,
                applied_at timestamptz NOT NULL DEFAULT now()
            )
            """)
        let current = try version(db)
        if let last = sorted.last, current > last.version {
            throw TooNewError(versions: (current, last.version))
        }
        var applied: [Int] = []
        for m in sorted where m.version > current {
            try db.transaction {
                try db.execute(m.sql)
                try db.query("INSERT INTO schema_version (version) VALUES ($1::integer)", [.int(Int64(m.version))])
            }
            applied.append(m.version)
        }
        return applied
    }
}
#endif
