import Foundation
import LedgerModel
import SQLiteKit

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
        let db = try LedgerApp.openWriter(configuration)
        do {
            let (account, token) = try db.transaction {
                try SQLiteLedgerTransaction(db).createAccount(handle: handle, displayName: display, deviceName: deviceName,
                                                              now: Timestamp.nowMs())
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
        let db = try SQLiteConnection(path: configuration.databasePath, mode: .readOnly)
        do {
            try db.backup(to: path)
        } catch let e as SQLiteError {
            try? FileManager.default.removeItem(atPath: path)
            throw Failure(description: "cannot write the backup to \(path): \(e.message)")
        }
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
    public struct CheckReport: Sendable {
        public var problems: [String]
        public var children: Int
        public var transactions: Int
        public var ok: Bool { problems.isEmpty }

        public init(problems: [String], children: Int, transactions: Int) {
            self.problems = problems
            self.children = children
            self.transactions = transactions
        }

        /// The report of a database whose schema is not this program's (nil when it is).
        static func schemaMismatch(_ version: Int, known: Int, migrate: String) -> CheckReport? {
            if version == known { return nil }
            let problem = version < known
                ? "schema: the database is at version \(version), this program's is \(known); \(migrate)"
                : "schema: the database is at version \(version), newer than this program's \(known)"
            return CheckReport(problems: [problem], children: 0, transactions: 0)
        }

        public var json: String {
            JSONValue.object(["ok": .bool(ok), "children": .int(Int64(children)), "transactions": .int(Int64(transactions)),
                              "problems": .array(problems.map { .string($0) })]).serializedString
        }
    }

    /// SQLite's integrity and foreign-key checks, and every cached balance against its ledger sum
    /// (over PostgreSQL: `checkPostgres`).
    /// A missing or unreadable database is a report with that problem, like any other outcome.
    public static func check(_ configuration: LedgerAppConfiguration) throws -> CheckReport {
        if let url = configuration.databaseURL { return checkPostgres(url: url) }
        if let missing = missingDatabase(configuration) {
            return CheckReport(problems: ["database: " + missing], children: 0, transactions: 0)
        }
        let db: SQLiteConnection
        do {
            db = try SQLiteConnection(path: configuration.databasePath, mode: .readOnly)
            _ = try db.queryOne("SELECT COUNT(*) FROM sqlite_master")
        } catch let e as SQLiteError {
            return CheckReport(problems: ["database: \(configuration.databasePath) cannot be read: \(e.message)"], children: 0, transactions: 0)
        }
        let version = Int(try db.queryOne("SELECT COALESCE(MAX(version), 0) FROM schema_version")?.int(0) ?? 0)
        if let mismatch = CheckReport.schemaMismatch(version, known: Schema.migrations.map(\.version).max() ?? 0,
                                                     migrate: "start the server once to migrate it") {
            return mismatch
        }
        try Schema.defineFunctions(db)
        var problems: [String] = []
        for row in try db.query("PRAGMA integrity_check") where row.string(0) != "ok" {
            problems.append("integrity: " + row.string(0))
        }
        for row in try db.query("PRAGMA foreign_key_check") {
            problems.append("foreign key: table \(row.string(0)) row \(row.string(1)) references missing \(row.string(2))")
        }
        // One pass over the ledger: sums per child (checked for Int64 overflow in SQLite, which errors on overflow).
        let mismatches = try db.query("""
            SELECT c.id, c.balance_cents, COALESCE(s.total, 0) FROM children c JOIN households h ON h.id = c.household_id
            LEFT JOIN (SELECT household_key, child_id, SUM(amount_cents) AS total FROM transactions GROUP BY household_key, child_id) s
                ON s.household_key = h.ledger_key AND s.child_id = c.id
            WHERE c.balance_cents != COALESCE(s.total, 0)
            """)
        for m in mismatches {
            problems.append("balance: child \(m.string(0)) caches \(m.int(1)) but its ledger sums to \(m.int(2))")
        }
        // The ledger has no foreign keys (schema version 6): every household needs its key, and
        // every row a household and a child of that household.
        for h in try db.query("SELECT id FROM households WHERE ledger_key IS NULL") {
            problems.append("ledger key: household \(h.string(0)) has none")
        }
        let orphans = try db.query("""
            SELECT t.id, t.household_key, t.child_id, h.id IS NULL FROM transactions t
            LEFT JOIN households h ON h.ledger_key = t.household_key
            LEFT JOIN children c ON c.household_id = h.id AND c.id = t.child_id
            WHERE c.id IS NULL ORDER BY t.n
            """)
        for o in orphans {
            problems.append(o.bool(3)
                ? "ledger: transaction \(o.string(0)) belongs to no household (ledger key \(o.int(1)))"
                : "ledger: transaction \(o.string(0)) names child \(o.string(2)), which its household does not have")
        }
        // Each row's key is the reversal id of its id: lookups by id and reserved reversal ids depend on it.
        let f = Schema.reversalKeyFunction
        for r in try db.query("SELECT id FROM transactions WHERE reversal_id IS NOT COALESCE(\(f)(id), 'not-a-uuid:' || id)") {
            problems.append("key: transaction \(r.string(0)) has the wrong reversal_id")
        }
        let badReversals = try db.query("""
            SELECT r.id FROM transactions r
            LEFT JOIN transactions t ON t.household_key = r.household_key AND t.reversal_id = \(f)(r.reverses_id) AND t.id = r.reverses_id
            WHERE r.reverses_id IS NOT NULL
              AND (t.n IS NULL OR r.amount_cents != -t.amount_cents OR r.child_id != t.child_id OR t.reversed_by_id IS NOT r.id)
            """)
        for r in badReversals { problems.append("reversal: \(r.string(0)) does not mirror its target") }
        // Ids are unique per household. Since version 8 no index of the database keeps them
        // so (the server's writer does, through its id index): a key held twice is a fault.
        for d in try db.query("""
            SELECT MIN(id), COUNT(*) FROM transactions GROUP BY household_key, reversal_id HAVING COUNT(*) > 1
            """) {
            problems.append("key: \(d.int(1)) transactions of one household share the id \(d.string(0))")
        }
        let children = Int(try db.queryOne("SELECT COUNT(*) FROM children")?.int(0) ?? 0)
        let transactions = Int(try db.queryOne("SELECT COUNT(*) FROM transactions")?.int(0) ?? 0)
        return CheckReport(problems: problems, children: children, transactions: transactions)
    }
}
