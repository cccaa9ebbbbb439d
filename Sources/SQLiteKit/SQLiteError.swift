/// A failed SQLite call: the result code and SQLite's message.
public struct SQLiteError: Error, CustomStringConvertible, Sendable {
    /// The (extended) SQLite result code, e.g. 19 for SQLITE_CONSTRAINT.
    public var code: Int32
    public var message: String
    /// The statement that failed, if any.
    public var sql: String?

    public init(code: Int32, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    /// The primary result code (low byte).
    public var primaryCode: Int32 { code & 0xff }
    public var isBusy: Bool { primaryCode == 5 || primaryCode == 6 }
    /// SQLITE_FULL: the disk (or `max_page_count`) has no room for the write. A write to the
    /// WAL that fails with ENOSPC answers this too.
    public var isFull: Bool { primaryCode == 13 }

    public var description: String {
        "SQLite error \(code): \(message)" + (sql.map { " in \($0)" } ?? "")
    }
}
