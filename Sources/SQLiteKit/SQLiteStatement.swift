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
    private var arena: UnsafeMutableRawPointer?
    private var arenaCapacity = 0

    deinit {
        sqlite3_finalize(handle)
        arena?.deallocate()
    }

    /// Binds `params` to ?1…?n after resetting the statement.
    public func bind(_ params: [SQLiteValue]) throws {
        // Every parameter is bound below (the count must match), so no clear_bindings.
        sqlite3_reset(handle)
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard expected == params.count else {
            throw SQLiteError(code: SQLITE_RANGE, message: "statement takes \(expected) parameters, got \(params.count)", sql: sql)
        }
        var bytes = 0, copies = false
        for value in params {
            switch value {
            case .text(let s): bytes += s.utf8.count; copies = true
            case .blob(let b): bytes += b.count; copies = true
            default: break
            }
        }
        if copies && (bytes > arenaCapacity || arena == nil) {
            // The old bytes may still be bound: unbind them before they are freed.
            sqlite3_clear_bindings(handle)
            arena?.deallocate()
            arenaCapacity = max(bytes, 2 * arenaCapacity, 256)
            arena = UnsafeMutableRawPointer.allocate(byteCount: arenaCapacity, alignment: 16)
        }
        var offset = 0
        for (i, value) in params.enumerated() {
            let idx = Int32(i + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(handle, idx)
            case .integer(let v): rc = sqlite3_bind_int64(handle, idx, v)
            case .real(let d): rc = sqlite3_bind_double(handle, idx, d)
            case .text(let s):
                // Never a null pointer (that would bind NULL), even for "".
                let start = arena! + offset
                let n = copyUTF8(s, to: start)
                rc = sqlite3_bind_text(handle, idx, start.assumingMemoryBound(to: CChar.self), Int32(n), SQLITE_STATIC)
                offset += n
            case .blob(let b):
                let start = arena! + offset
                b.withUnsafeBytes { if let base = $0.baseAddress, $0.count > 0 { start.copyMemory(from: base, byteCount: $0.count) } }
                rc = sqlite3_bind_blob(handle, idx, start, Int32(b.count), SQLITE_STATIC)
                offset += b.count
            }
            guard rc == SQLITE_OK else {
                sqlite3_clear_bindings(handle)
                throw connection.error(rc, sql: sql)
            }
        }
    }

    /// Copies `s`'s UTF-8 bytes to `to` (which has room for them); returns their count.
    private func copyUTF8(_ s: String, to: UnsafeMutableRawPointer) -> Int {
        var s = s
        return s.withUTF8 { u in
            if let base = u.baseAddress, u.count > 0 { to.copyMemory(from: base, byteCount: u.count) }
            return u.count
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
