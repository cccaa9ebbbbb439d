import CSQLite

extension SQLiteConnection {
    /// Defines `name(text)` on this connection only: a deterministic SQL function of one
    /// text argument that answers text, or NULL when `body` answers nil or the argument is
    /// NULL. For data migrations and checks that need a value SQL cannot compute; a schema
    /// must not depend on it (indexes or defaults calling it would break other connections).
    public func defineFunction(_ name: String, _ body: @escaping (String) -> String?) throws {
        let box = Unmanaged.passRetained(TextFunction(body)).toOpaque()
        let rc = sqlite3_create_function_v2(handle, name, 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, box, { context, count, arguments in
            let function = Unmanaged<TextFunction>.fromOpaque(sqlite3_user_data(context)!).takeUnretainedValue()
            guard count == 1, let argument = arguments?[0], let text = sqlite3_value_text(argument),
                  let answer = function.body(String(cString: text)) else {
                sqlite3_result_null(context)
                return
            }
            answer.withCString { sqlite3_result_text(context, $0, Int32(answer.utf8.count), unsafeBitCast(-1, to: sqlite3_destructor_type.self)) }
        }, nil, nil, { box in
            if let box { Unmanaged<TextFunction>.fromOpaque(box).release() }
        })
        guard rc == SQLITE_OK else { throw error(rc) }
    }
}

/// The Swift body of a function defined with `defineFunction`.
private final class TextFunction {
    let body: (String) -> String?
    init(_ body: @escaping (String) -> String?) { self.body = body }
}
