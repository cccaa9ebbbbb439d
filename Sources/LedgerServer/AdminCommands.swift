import Foundation
import LedgerCore
import LedgerModel
import LedgerStorageSQLite

/// The administrative commands of `kidledger-server` that work on the data directory.
public enum AdminCommands {
    public struct Failure: Error, CustomStringConvertible {
        public var description: String
    }

    /// Creates an account and prints `{account, token}` (the token secret is shown once).
    public static func createAccount(_ configuration: LedgerAppConfiguration, handle: String, name: String, deviceName: String) throws -> String {
        if case .failure(let e) = Validation.handle(handle) { throw Failure(description: "--handle \(e.message)") }
        guard case .success(let display) = Validation.name(name) else { throw Failure(description: "--name must be 1 to 100 characters") }
        try FileManager.default.createDirectory(atPath: configuration.dataDirectory, withIntermediateDirectories: true)
        do {
            let (account, token) = try SQLiteMaintenance.write(path: configuration.databasePath,
                                                               cacheBytes: configuration.writerCacheBytes) {
                try $0.createAccount(handle: handle, displayName: display, deviceName: deviceName, now: Timestamp.nowMs())
            }
            return AccountRoutes.createdJSON(account, token).serializedString
        } catch let e as LedgerStorageError {
            throw Failure(description: e.apiError.detail)
        }
    }

    /// Writes a consistent copy of the database to `path` while the server may keep running.
    public static func backup(_ configuration: LedgerAppConfiguration, to path: String) throws {
        if configuration.databaseURL != nil { throw Failure(description: postgresBackupAdvice(configuration)) }
        if let missing = missingDatabase(configuration) { throw Failure(description: missing) }
        if FileManager.default.fileExists(atPath: path) {
            throw Failure(description: "\(path) exists; refusing to overwrite it")
        }
        let folder = URL(fileURLWithPath: path).deletingLastPathComponent().path
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            throw Failure(description: "cannot write the backup to \(path): the folder \(folder) does not exist (create it first)")
        }
        guard FileManager.default.isWritableFile(atPath: folder) else {
            throw Failure(description: "cannot write the backup to \(path): the folder \(folder) is not writable")
        }
        try SQLiteMaintenance.backup(path: configuration.databasePath, to: path)
    }

    /// Why there is no database to read in the configured data folder, nil when there is one.
    static func missingDatabase(_ configuration: LedgerAppConfiguration) -> String? {
        let fm = FileManager.default
        if fm.fileExists(atPath: configuration.databasePath) { return nil }
        var isFolder: ObjCBool = false
        if !fm.fileExists(atPath: configuration.dataDirectory, isDirectory: &isFolder) || !isFolder.boolValue {
            return "the data folder \(configuration.dataDirectory) does not exist; pass the server's --data-dir (or KIDLEDGER_DATA_DIR)"
        }
        return "no database at \(configuration.databasePath); the server creates it when it first starts with this --data-dir"
    }

    /// The result of `check`.
    package typealias CheckReport = StorageCheckReport

    /// SQLite's integrity and foreign-key checks, and every cached balance against its ledger sum
    /// (over PostgreSQL: `checkPostgres`).
    /// A missing or unreadable database is a report with that problem, like any other outcome.
    package static func check(_ configuration: LedgerAppConfiguration) throws -> CheckReport {
        if let url = configuration.databaseURL { return checkPostgres(url: url) }
        if let missing = missingDatabase(configuration) {
            return CheckReport(problems: ["database: " + missing], children: 0, transactions: 0)
        }
        return try SQLiteMaintenance.check(path: configuration.databasePath)
    }
}
