import Foundation
import LedgerCore
import SQLiteKit

/// `restore` and `rewound` over SQLite: installing a backup, and giving the database a new
/// incarnation so that devices holding positions of the history it lost reconcile.
extension SQLiteMaintenance {
    /// What `restore` did.
    package struct RestoreOutcome: Sendable {
        /// The database's new incarnation.
        package var incarnation: Int64
        /// Where the database it replaced was moved (with its `-wal`/`-shm`), nil when there was none.
        package var replaced: String?
        /// What the installed database holds.
        package var children: Int
        package var transactions: Int
    }

    /// Installs the backup `backup` as the database of the data folder `directory`: refuses
    /// while a server serves the folder (its lock), copies the backup beside the database,
    /// migrates and checks the copy (a backup that fails `check` is refused and nothing
    /// changes), gives it a new incarnation, then moves the current database and its WAL
    /// files aside as `kidledger.sqlite.replaced-<time>` and renames the copy into place.
    package static func restore(from backup: String, directory: String, databaseFile: String, cacheBytes: Int,
                                now: Int64) throws -> RestoreOutcome {
        let fm = FileManager.default
        var isFolder: ObjCBool = false
        guard fm.fileExists(atPath: backup, isDirectory: &isFolder), !isFolder.boolValue else {
            throw StorageFailure("there is no backup file at \(backup)")
        }
        try fm.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let lock = try DataFolderLock(directory: directory)
        defer { lock.release() }
        let target = directory + "/" + databaseFile
        if URL(fileURLWithPath: backup).resolvingSymlinksInPath().path == URL(fileURLWithPath: target).resolvingSymlinksInPath().path {
            throw StorageFailure("\(backup) is the database itself; restore from a backup file")
        }
        let staging = target + ".restoring"
        for suffix in ["", "-wal", "-shm", "-journal"] { try? fm.removeItem(atPath: staging + suffix) }
        defer { for suffix in ["", "-wal", "-shm", "-journal"] { try? fm.removeItem(atPath: staging + suffix) } }
        // A consistent copy through SQLite (a backup someone copied while it was in WAL mode
        // is read with its WAL), never the file's bytes as they lie.
        do {
            let source = try SQLiteConnection(path: backup, mode: .readOnly)
            _ = try source.queryOne("SELECT COUNT(*) FROM sqlite_master")
            try source.backup(to: staging)
        } catch let e as SQLiteError {
            throw StorageFailure("\(backup) is not a kidledger database that can be read: \(e.message)")
        }
        let incarnation = Int64.random(in: 1...Int64.max)
        do {
            let db = try SQLiteLedgerStorage.openWriter(path: staging, cacheBytes: cacheBytes)
            try newIncarnation(db, incarnation, reason: "restore", now: now)
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            try db.execute("PRAGMA journal_mode = DELETE")
        } catch let e as SQLiteError {
            throw StorageFailure("\(backup) could not be migrated: \(e.message)")
        }
        let report = try check(path: staging)
        guard report.ok else {
            throw StorageFailure("\(backup) fails the check, nothing was restored: " + report.problems.prefix(5).joined(separator: "; "))
        }
        var replaced: String?
        if fm.fileExists(atPath: target) {
            let aside = target + ".replaced-" + Self.stamp(now)
            for suffix in ["", "-wal", "-shm"] where fm.fileExists(atPath: target + suffix) {
                try fm.moveItem(atPath: target + suffix, toPath: aside + suffix)
            }
            replaced = aside
        } else {
            for suffix in ["-wal", "-shm"] { try? fm.removeItem(atPath: target + suffix) }
        }
        try fm.moveItem(atPath: staging, toPath: target)
        return RestoreOutcome(incarnation: incarnation, replaced: replaced, children: report.children,
                              transactions: report.transactions)
    }

    /// Gives the database at `path` a new incarnation (after it was put back in time by other
    /// means than `restore`); answers it. Safe beside a running server: the next feed read sees it.
    package static func rewound(path: String, cacheBytes: Int, now: Int64) throws -> Int64 {
        let db = try SQLiteLedgerStorage.openWriter(path: path, cacheBytes: cacheBytes)
        let incarnation = Int64.random(in: 1...Int64.max)
        try newIncarnation(db, incarnation, reason: "rewound", now: now)
        try db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        return incarnation
    }

    /// The database's incarnation at `path`.
    package static func incarnation(path: String) throws -> Int64 {
        let db = try SQLiteConnection(path: path, mode: .readOnly)
        return try db.queryOne("SELECT incarnation FROM database_incarnation WHERE id = 1")?.int(0) ?? 0
    }

    private static func newIncarnation(_ db: SQLiteConnection, _ incarnation: Int64, reason: String, now: Int64) throws {
        try db.run("UPDATE database_incarnation SET incarnation = ?, since = ?, reason = ? WHERE id = 1",
                   [.integer(incarnation), .integer(now), .text(reason)])
    }

    /// `20261206T041500Z` for a time in milliseconds.
    static func stamp(_ ms: Int64) -> String {
        let f = DateFormatter()
        f.locale = Locale(identifier: "en_US_POSIX")
        f.timeZone = TimeZone(identifier: "UTC")
        f.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return f.string(from: Date(timeIntervalSince1970: Double(ms) / 1000))
    }
}
