import CSQLite

extension SQLiteConnection {
    /// Defines `name(text)` on this connection only: a deterministic SQL function of one
    /// text argument that answers text, or NULL when `body` answers nil or the argument is
    /// NULL. For data migrations and checks that need a value SQL cannot compute; a schema
    /// must not depend on it (indexes or defaults calling it would break other connections).
    public func defineFunction(_ name: String, _ body: @escaping (String) -> String?) throws {
        try defineValueFunction(name) { text in body(text).map { .text($0) } ?? .null }
    }

    /// `defineFunction` answering any value: `.blob` for binary keys, `.null` when the
    /// argument is NULL or `body` says so.
    public func defineValueFunction(_ name: String, _ body: @escaping (String) -> SQLiteValue) throws {
        let box = Unmanaged.passRetained(ValueFunction(body)).toOpaque()
        let rc = sqlite3_create_function_v2(handle, name, 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, box, { context, count, arguments in
            let function = Unmanaged<ValueFunction>.fromOpaque(sqlite3_user_data(context)!).takeUnretainedValue()
            guard count == 1, let argument = arguments?[0], let text = sqlite3_value_text(argument) else {
                sqlite3_result_null(context)
                return
            }
            let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
            switch function.body(String(cString: text)) {
            case .null: sqlite3_result_null(context)
            case .integer(let v): sqlite3_result_int64(context, v)
            case .real(let v): sqlite3_result_double(context, v)
            case .text(let v): v.withCString { sqlite3_result_text(context, $0, Int32(v.utf8.count), transient) }
            case .blob(let v) where v.isEmpty: sqlite3_result_zeroblob(context, 0)
            case .blob(let v): v.withUnsafeBytes { sqlite3_result_blob(context, $0.baseAddress, Int32(v.count), transient) }
            }
        }, nil, nil, { box in
            if let box { Unmanaged<ValueFunction>.fromOpaque(box).release() }
        })
        guard rc == SQLITE_OK else { throw error(rc) }
    }
}

/// The Swift body of a function defined with `defineValueFunction`.
private final class ValueFunction {
    let body: (String) -> SQLiteValue
    init(_ body: @escaping (String) -> SQLiteValue) { self.body = body }
}
