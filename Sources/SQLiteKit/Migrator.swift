/// One forward step of a schema: applied once, in order of `version`.
public struct Migration: Sendable {
    public var version: Int
    public var sql: String
    /// Runs on the connection just before `sql`, in the same transaction (to define SQL
    /// functions the step's data copy calls, say). Default: nothing.
    public var prepare: (@Sendable (SQLiteConnection) throws -> Void)?
    public init(version: Int, sql: String, prepare: (@Sendable (SQLiteConnection) throws -> Void)? = nil) {
        self.version = version
        self.sql = sql
        self.prepare = prepare
    }
}

/// Applies forward-only migrations, recording the schema version in `schema_version`.
/// Running it again is a no-op; a database newer than the code is refused.
public enum Migrator {
    public struct TooNewError: Error, CustomStringConvertible {
        public var databaseVersion: Int
        public var knownVersion: Int
        public var description: String {
            "database schema version \(databaseVersion) is newer than this program's \(knownVersion)"
        }
    }

    /// The current schema version (0 for a new database).
    public static func version(_ db: SQLiteConnection) throws -> Int {
        try db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL, applied_at INTEGER NOT NULL)")
        return Int(try db.queryOne("SELECT COALESCE(MAX(version), 0) FROM schema_version")?.int(0) ?? 0)
    }

    /// Applies every migration above the current version, each in its own transaction.
    /// - Returns: the versions applied.
    @discardableResult
    public static func migrate(_ db: SQLiteConnection, _ migrations: [Migration]) throws -> [Int] {
        let sorted = migrations.sorted { $0.version < $1.version }
        let current = try version(db)
        if let last = sorted.last, current > last.version {
            throw TooNewError(databaseVersion: current, knownVersion: last.version)
        }
        var applied: [Int] = []
        for m in sorted where m.version > current {
            // Read again under the write lock: another connection may have applied it meanwhile.
            let ran = try db.transaction { () throws -> Bool in
                guard try version(db) < m.version else { return false }
                try m.prepare?(db)
                try db.execute(m.sql)
                try db.run("INSERT INTO schema_version (version, applied_at) VALUES (?, strftime('%s','now'))", [.int(m.version)])
                return true
            }
            if ran { applied.append(m.version) }
        }
        return applied
    }
}
