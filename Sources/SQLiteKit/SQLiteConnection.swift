import CSQLite

/// One SQLite connection with a statement cache. Not thread-safe: use it from one thread
/// at a time (the server gives each reader and the writer its own connection).
public final class SQLiteConnection {
    /// How to open the file.
    public enum Mode: Sendable {
        /// Read and write, creating the file when absent.
        case readWrite
        /// Read only; the file must exist.
        case readOnly
    }

    package let handle: OpaquePointer
    public let path: String
    // A connection is used by one thread at a time, one access at a time: no run-time
    // exclusivity checks (about a hundred instructions each, two per statement).
    @exclusivity(unchecked) private var cache: [String: SQLiteStatement] = [:]
    @exclusivity(unchecked) private var byAddress: [Int: SQLiteStatement] = [:]
    @exclusivity(unchecked) private var transactionDepth = 0

    /// Opens `path` (`:memory:` for a private in-memory database).
    /// - Parameters:
    ///   - busyTimeoutMs: how long a locked database is retried, in milliseconds (default 5000).
    ///   - walMode: switch a read-write database to WAL (default true).
    ///   - synchronousFull: `PRAGMA synchronous=FULL` so a commit survives power loss (default true).
    ///   - vfs: the name of a registered SQLite VFS to open the file through (default: SQLite's).
    ///   - newFilePageSize: the page size in bytes of a database this opening creates (a power
    ///     of two, 512–65536); an existing database keeps its own. Default: SQLite's (4096).
    package init(path: String, mode: Mode = .readWrite, busyTimeoutMs: Int32 = 5000,
                 walMode: Bool = true, synchronousFull: Bool = true, vfs: String?, newFilePageSize: Int? = nil) throws {
        _ = SQLiteConnection.configured
        var db: OpaquePointer?
        let flags: Int32 = (mode == .readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE))
            | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &db, flags, vfs)
        guard rc == SQLITE_OK, let db else {
            let message = db.map { String(cString: sqlite3_errmsg($0)) } ?? "cannot open"
            if let db { sqlite3_close_v2(db) }
            throw SQLiteError(code: rc, message: message + " (\(path))")
        }
        self.handle = db
        self.path = path
        sqlite3_busy_timeout(db, busyTimeoutMs)
        try execute("PRAGMA foreign_keys = ON")
        if let newFilePageSize, mode == .readWrite {
            // Takes effect only while the file is still empty: before the switch to WAL below,
            // which writes the first page.
            try execute("PRAGMA page_size = \(newFilePageSize)")
        }
        if mode == .readWrite && walMode && path != ":memory:" {
            // Switching a new file to WAL needs it alone, and SQLite answers "busy" at once
            // (without its busy handler) when another connection opens it at the same moment:
            // retried for as long as the busy timeout allows.
            var waited: Int32 = 0
            while true {
                do {
                    try execute("PRAGMA journal_mode = WAL")
                    break
                } catch let error as SQLiteError where error.isBusy && waited < busyTimeoutMs {
                    sqlite3_sleep(5)
                    waited += 5
                }
            }
        }
        try execute(synchronousFull ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
    }

    /// Opens `path` (`:memory:` for a private in-memory database).
    /// - Parameters:
    ///   - busyTimeoutMs: how long a locked database is retried, in milliseconds (default 5000).
    ///   - walMode: switch a read-write database to WAL (default true).
    ///   - synchronousFull: `PRAGMA synchronous=FULL` so a commit survives power loss (default true).
    public convenience init(path: String, mode: Mode = .readWrite, busyTimeoutMs: Int32 = 5000,
                            walMode: Bool = true, synchronousFull: Bool = true) throws {
        try self.init(path: path, mode: mode, busyTimeoutMs: busyTimeoutMs, walMode: walMode,
                      synchronousFull: synchronousFull, vfs: nil)
    }

    /// Process-wide settings applied once, before SQLite initialises: no memory-usage
    /// statistics (they take a global mutex on every allocation, and nothing reads them),
    /// and the default page cache behind a wrapper that keeps B-tree page swaps from making
    /// every later commit scan the whole cache (see `kidledger_install_page_cache` in the
    /// CSQLite shim): without it a commit after a page split costs more the larger the cache.
    /// SQLite's memory comes from malloc with blocks of 1–8 KiB, such as a page split's
    /// scratch space, kept per thread for the next request (`kidledger_install_allocator`).
    private static let configured: Bool = {
        let memstatus = kidledger_sqlite3_config_memstatus(0)
        let allocator = kidledger_install_allocator()
        let pageCache = kidledger_install_page_cache()
        return memstatus == SQLITE_OK && allocator == SQLITE_OK && pageCache == SQLITE_OK
    }()

    /// Blocks the calling thread keeps for SQLite's next mid-size request, for tests. Read
    /// here, in the file that installs the allocator (see `pageCacheSwaps`).
    package static var allocatorBlocksKeptHere: Int { Int(kidledger_alloc_kept_here()) }

    /// Applies the process-wide settings if SQLite has not initialised yet; true when they
    /// are in force. Anything that may initialise SQLite before the first connection opens
    /// (`sqlite3_vfs_find` does) must call this first: once initialised, SQLite refuses them.
    @discardableResult
    package static func applyProcessSettings() -> Bool { configured }

    /// Page swaps the page cache wrapper has handled in this process, for tests. Read here,
    /// in the file that installs the wrapper: the C shim's functions and their counter are
    /// compiled into each Swift file that calls them.
    package static var pageCacheSwaps: UInt { kidledger_page_cache_swap_count() }

    deinit {
        byAddress.removeAll()
        cache.removeAll()
        sqlite3_close_v2(handle)
    }

    func error(_ rc: Int32, sql: String? = nil) -> SQLiteError {
        SQLiteError(code: sqlite3_extended_errcode(handle), message: String(cString: sqlite3_errmsg(handle)), sql: sql)
    }

    /// Runs one or more statements without parameters (schema scripts, pragmas).
    public func execute(_ sql: String) throws {
        var errmsg: UnsafeMutablePointer<CChar>?
        let rc = sqlite3_exec(handle, sql, nil, nil, &errmsg)
        if rc != SQLITE_OK {
            let message = errmsg.map { String(cString: $0) } ?? "error"
            sqlite3_free(errmsg)
            throw SQLiteError(code: rc, message: message, sql: sql)
        }
    }

    /// A cached prepared statement for `sql`.
    public func prepare(_ sql: String) throws -> SQLiteStatement {
        // Most SQL is a literal or a stored constant whose bytes never move: found by the
        // address of its bytes (confirmed by an equality test that is a pointer comparison
        // for the same string) without hashing a few hundred bytes per statement.
        let address = sql.utf8.withContiguousStorageIfAvailable { Int(bitPattern: $0.baseAddress) } ?? 0
        if address != 0, let s = byAddress[address], s.sql == sql { return s }
        let s: SQLiteStatement
        if let cached = cache[sql] {
            s = cached
        } else {
            s = try SQLiteStatement(connection: self, sql: sql)
            cache[sql] = s
        }
        if address != 0 {
            // Strings built at run time come and go at ever new addresses.
            if byAddress.count >= 1024 { byAddress.removeAll(keepingCapacity: true) }
            byAddress[address] = s
        }
        return s
    }

    /// Runs one statement with bound parameters, ignoring any rows.
    public func run(_ sql: String, _ params: [SQLiteValue] = []) throws {
        let s = try prepare(sql)
        try s.bind(params)
        try s.finish()
    }

    /// Runs one statement whose parameters `bind` gives one by one (no array of values),
    /// ignoring any rows.
    public func run(_ sql: String, binding bind: (inout SQLiteBinder) throws -> Void) throws {
        let s = try prepare(sql)
        try s.bind(bind)
        try s.finish()
    }

    /// Runs one statement and returns all rows.
    public func query(_ sql: String, _ params: [SQLiteValue] = []) throws -> [SQLiteRow] {
        let s = try prepare(sql)
        try s.bind(params)
        return try s.all()
    }

    /// The first row, or nil.
    public func queryOne(_ sql: String, _ params: [SQLiteValue] = []) throws -> SQLiteRow? {
        let s = try prepare(sql)
        try s.bind(params)
        defer { sqlite3_reset(s.handle) }
        return try s.step() ? s.row() : nil
    }

    /// Rows changed by the last INSERT/UPDATE/DELETE.
    public var changes: Int { Int(sqlite3_changes(handle)) }
    /// Rows changed by every INSERT/UPDATE/DELETE completed on this connection so far.
    public var totalChanges: Int64 { sqlite3_total_changes64(handle) }
    public var lastInsertRowID: Int64 { sqlite3_last_insert_rowid(handle) }
    public var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs `body` in `BEGIN IMMEDIATE … COMMIT`, rolling back when it throws.
    /// Nested calls become savepoints.
    @discardableResult
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        if transactionDepth > 0 {
            let name = "sp\(transactionDepth)"
            try execute("SAVEPOINT \(name)")
            transactionDepth += 1
            defer { transactionDepth -= 1 }
            do {
                let result = try body()
                try execute("RELEASE \(name)")
                return result
            } catch {
                try? execute("ROLLBACK TO \(name); RELEASE \(name)")
                throw error
            }
        }
        try execute("BEGIN IMMEDIATE")
        transactionDepth = 1
        defer { transactionDepth = 0 }
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            if isInTransaction { try? execute("ROLLBACK") }
            throw error
        }
    }

    /// Copies the whole database to `path` with the online backup API
    /// (a consistent snapshot while other connections keep writing).
    public func backup(to path: String) throws {
        var dest: OpaquePointer?
        let rc = sqlite3_open_v2(path, &dest, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nil)
        guard rc == SQLITE_OK, let dest else {
            if let dest { sqlite3_close_v2(dest) }
            throw SQLiteError(code: rc, message: "cannot open backup target \(path)")
        }
        defer { sqlite3_close_v2(dest) }
        guard let b = sqlite3_backup_init(dest, "main", handle, "main") else {
            throw SQLiteError(code: sqlite3_errcode(dest), message: String(cString: sqlite3_errmsg(dest)))
        }
        var step: Int32
        repeat {
            step = sqlite3_backup_step(b, 256)
            if step == SQLITE_BUSY || step == SQLITE_LOCKED { sqlite3_sleep(10) }
        } while step == SQLITE_OK || step == SQLITE_BUSY || step == SQLITE_LOCKED
        let finish = sqlite3_backup_finish(b)
        guard step == SQLITE_DONE, finish == SQLITE_OK else {
            throw SQLiteError(code: finish, message: String(cString: sqlite3_errmsg(dest)))
        }
    }
}
