import CSQLite

private let SQLITE_STATIC = unsafeBitCast(0, to: sqlite3_destructor_type.self)

/// A prepared statement. Parameters are only ever bound, never spliced into SQL.
/// Owned by one connection and used by one thread at a time.
public final class SQLiteStatement {
    let handle: OpaquePointer
    let sql: String
    private unowned let connection: SQLiteConnection

    init(connection: SQLiteConnection, sql: String) throws {
        var stmt: OpaquePointer?
        let rc = sqlite3_prepare_v3(connection.handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &stmt, nil)
        guard rc == SQLITE_OK, let stmt else {
            throw connection.error(rc, sql: sql)
        }
        self.handle = stmt
        self.sql = sql
        self.connection = connection
    }

    /// The bytes of the bound text and blob parameters, bound without a copy
    /// (SQLITE_STATIC): SQLite reads them until the statement is bound again or finalized,
    /// and every `bind` resets the statement before it rewrites them. A copy per parameter
    /// (SQLITE_TRANSIENT) costs SQLite a malloc and a free each; this buffer is reused.
    /// Bytes that did not fit go to chunks of their own (`overflow`), which stay bound
    /// until the next `bind` unbinds them, frees them and grows the buffer to what the
    /// last one needed: an arena that moved would leave earlier parameters pointing at
    /// freed bytes.
    private var arena: UnsafeMutableRawPointer?
    private var arenaCapacity = 0
    private var arenaUsed = 0
    private var overflow: [UnsafeMutableRawPointer] = []
    /// Bytes the last `bind` copied.
    private var boundBytes = 0

    deinit {
        sqlite3_finalize(handle)
        arena?.deallocate()
        for chunk in overflow { chunk.deallocate() }
    }

    /// Binds `params` to ?1…?n after resetting the statement.
    public func bind(_ params: [SQLiteValue]) throws {
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard expected == params.count else {
            sqlite3_reset(handle)
            throw SQLiteError(code: SQLITE_RANGE, message: "statement takes \(expected) parameters, got \(params.count)", sql: sql)
        }
        try bind { for value in params { try $0.value(value) } }
    }

    /// Binds ?1…?n after resetting the statement: `body` gives the values in order, one
    /// call of the binder each, without an array of `SQLiteValue`s to build and destroy
    /// (the writer's insert of a transaction binds twelve). Every parameter must be given:
    /// fewer or more throw `SQLITE_RANGE` and leave none bound.
    public func bind(_ body: (inout SQLiteBinder) throws -> Void) throws {
        // Every parameter is bound below (the count must match), so no clear_bindings.
        sqlite3_reset(handle)
        if !overflow.isEmpty {
            // Unbind the chunks' bytes before they are freed.
            sqlite3_clear_bindings(handle)
            for chunk in overflow { chunk.deallocate() }
            overflow.removeAll()
            arena?.deallocate()
            arenaCapacity = max(boundBytes, 2 * arenaCapacity, 256)
            arena = UnsafeMutableRawPointer.allocate(byteCount: arenaCapacity, alignment: 16)
        }
        arenaUsed = 0
        boundBytes = 0
        var binder = SQLiteBinder(statement: self)
        do {
            try body(&binder)
        } catch {
            sqlite3_clear_bindings(handle)
            throw error
        }
        let expected = sqlite3_bind_parameter_count(handle)
        guard binder.count == expected else {
            sqlite3_clear_bindings(handle)
            throw SQLiteError(code: SQLITE_RANGE, message: "statement takes \(expected) parameters, got \(binder.count)", sql: sql)
        }
    }

    /// Room for `count` bytes that stay put until the next `bind`.
    fileprivate func reserve(_ count: Int) -> UnsafeMutableRawPointer {
        boundBytes += count
        if let arena, arenaUsed + count <= arenaCapacity {
            defer { arenaUsed += count }
            return arena + arenaUsed
        }
        // Never a null pointer (that would bind NULL), even for "".
        let chunk = UnsafeMutableRawPointer.allocate(byteCount: max(count, 1), alignment: 16)
        overflow.append(chunk)
        return chunk
    }

    /// `rc` of binding a parameter: throws (unbinding every parameter) unless SQLITE_OK.
    fileprivate func bound(_ rc: Int32) throws {
        guard rc == SQLITE_OK else {
            sqlite3_clear_bindings(handle)
            throw connection.error(rc, sql: sql)
        }
    }

    /// Steps once; true when a row is available.
    public func step() throws -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let err = connection.error(rc, sql: sql)
            sqlite3_reset(handle)
            throw err
        }
    }

    /// The current row's values.
    public func row() -> SQLiteRow {
        let n = sqlite3_column_count(handle)
        var values: [SQLiteValue] = []
        values.reserveCapacity(Int(n))
        for i in 0..<n {
            switch sqlite3_column_type(handle, i) {
            case SQLITE_INTEGER: values.append(.integer(sqlite3_column_int64(handle, i)))
            case SQLITE_FLOAT: values.append(.real(sqlite3_column_double(handle, i)))
            case SQLITE_TEXT:
                if let p = sqlite3_column_text(handle, i) {
                    let len = Int(sqlite3_column_bytes(handle, i))
                    values.append(.text(String(decoding: UnsafeBufferPointer(start: p, count: len), as: UTF8.self)))
                } else { values.append(.text("")) }
            case SQLITE_BLOB:
                let len = Int(sqlite3_column_bytes(handle, i))
                if let p = sqlite3_column_blob(handle, i), len > 0 {
                    values.append(.blob(Array(UnsafeRawBufferPointer(start: p, count: len))))
                } else { values.append(.blob([])) }
            default: values.append(.null)
            }
        }
        return SQLiteRow(values: values)
    }

    /// The type of column `i` of the current row.
    public func columnType(_ i: Int32) -> SQLiteColumnType {
        switch sqlite3_column_type(handle, i) {
        case SQLITE_INTEGER: return .integer
        case SQLITE_FLOAT: return .real
        case SQLITE_TEXT: return .text
        case SQLITE_BLOB: return .blob
        default: return .null
        }
    }

    /// Column `i` of the current row as an integer, without building the row (for scans
    /// of many rows).
    public func int64(_ i: Int32) -> Int64 { sqlite3_column_int64(handle, i) }

    /// Calls `body` with the bytes of column `i` of the current row (a blob's, or a text's
    /// UTF-8), valid during the call only; no copy.
    public func withColumnBytes<T>(_ i: Int32, _ body: (UnsafeRawBufferPointer) throws -> T) rethrows -> T {
        let start: UnsafeRawPointer? = sqlite3_column_type(handle, i) == SQLITE_TEXT
            ? sqlite3_column_text(handle, i).map(UnsafeRawPointer.init) : sqlite3_column_blob(handle, i)
        let count = Int(sqlite3_column_bytes(handle, i))
        return try body(UnsafeRawBufferPointer(start: count > 0 ? start : nil, count: count > 0 ? count : 0))
    }

    /// Runs to completion and collects every row.
    public func all() throws -> [SQLiteRow] {
        var rows: [SQLiteRow] = []
        while try step() { rows.append(row()) }
        sqlite3_reset(handle)
        return rows
    }

    /// Runs to completion, ignoring rows.
    public func finish() throws {
        while try step() {}
        sqlite3_reset(handle)
    }
}

/// The storage class of a column value.
public enum SQLiteColumnType: Sendable {
    case integer, real, text, blob, null
}

/// The parameters of one `SQLiteStatement.bind(_:)` call, given in order (?1, ?2, …).
public struct SQLiteBinder {
    fileprivate let statement: SQLiteStatement
    /// Parameters bound so far.
    public private(set) var count: Int32 = 0

    fileprivate init(statement: SQLiteStatement) { self.statement = statement }

    public mutating func integer(_ v: Int64) throws {
        count += 1
        try statement.bound(sqlite3_bind_int64(statement.handle, count, v))
    }

    public mutating func null() throws {
        count += 1
        try statement.bound(sqlite3_bind_null(statement.handle, count))
    }

    public mutating func real(_ d: Double) throws {
        count += 1
        try statement.bound(sqlite3_bind_double(statement.handle, count, d))
    }

    public mutating func text(_ s: String) throws {
        count += 1
        var s = s
        let rc = s.withUTF8 { u in
            let start = statement.reserve(u.count)
            if let base = u.baseAddress, u.count > 0 { start.copyMemory(from: base, byteCount: u.count) }
            return sqlite3_bind_text(statement.handle, count, start.assumingMemoryBound(to: CChar.self), Int32(u.count), SQLITE_STATIC)
        }
        try statement.bound(rc)
    }

    /// Text, or NULL for nil.
    public mutating func text(_ s: String?) throws {
        if let s { try text(s) } else { try null() }
    }

    public mutating func blob(_ b: [UInt8]) throws {
        try b.withUnsafeBytes { try blob($0) }
    }

    /// A blob of `bytes` (copied; they need not outlive the call).
    public mutating func blob(_ bytes: UnsafeRawBufferPointer) throws {
        count += 1
        let start = statement.reserve(bytes.count)
        if let base = bytes.baseAddress, bytes.count > 0 { start.copyMemory(from: base, byteCount: bytes.count) }
        try statement.bound(sqlite3_bind_blob(statement.handle, count, start, Int32(bytes.count), SQLITE_STATIC))
    }

    public mutating func value(_ v: SQLiteValue) throws {
        switch v {
        case .null: try null()
        case .integer(let i): try integer(i)
        case .real(let d): try real(d)
        case .text(let s): try text(s)
        case .blob(let b): try blob(b)
        }
    }
}
