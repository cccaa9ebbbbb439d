import CSQLite

private let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

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

    deinit { sqlite3_finalize(handle) }

    /// Binds `params` to ?1…?n after resetting the statement.
    public func bind(_ params: [SQLiteValue]) throws {
        // Every parameter is bound below (the count must match), so no clear_bindings.
        sqlite3_reset(handle)
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard expected == params.count else {
            throw SQLiteError(code: SQLITE_RANGE, message: "statement takes \(expected) parameters, got \(params.count)", sql: sql)
        }
        for (i, value) in params.enumerated() {
            let idx = Int32(i + 1)
            let rc: Int32
            switch value {
            case .null: rc = sqlite3_bind_null(handle, idx)
            case .integer(let v): rc = sqlite3_bind_int64(handle, idx, v)
            case .real(let d): rc = sqlite3_bind_double(handle, idx, d)
            case .text(let s):
                rc = s.withCString { sqlite3_bind_text(handle, idx, $0, Int32(s.utf8.count), SQLITE_TRANSIENT) }
            case .blob(let b):
                rc = b.withUnsafeBytes { sqlite3_bind_blob(handle, idx, $0.baseAddress, Int32($0.count), SQLITE_TRANSIENT) }
            }
            guard rc == SQLITE_OK else { throw connection.error(rc, sql: sql) }
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
