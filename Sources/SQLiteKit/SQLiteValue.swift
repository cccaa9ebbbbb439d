/// A value bound to or read from SQLite.
public enum SQLiteValue: Sendable, Equatable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob([UInt8])
}

extension SQLiteValue: ExpressibleByIntegerLiteral, ExpressibleByStringLiteral,
                       ExpressibleByNilLiteral, ExpressibleByBooleanLiteral {
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(nilLiteral: ()) { self = .null }
    public init(booleanLiteral value: Bool) { self = .integer(value ? 1 : 0) }
}

extension SQLiteValue {
    /// `.integer` of an `Int`.
    public static func int(_ v: Int) -> SQLiteValue { .integer(Int64(v)) }
    /// `.integer(1/0)` of a Bool.
    public static func bool(_ v: Bool) -> SQLiteValue { .integer(v ? 1 : 0) }
    /// `.text` or `.null`.
    public static func optionalText(_ v: String?) -> SQLiteValue { v.map { .text($0) } ?? .null }
    /// `.integer` or `.null`.
    public static func optionalInteger(_ v: Int64?) -> SQLiteValue { v.map { .integer($0) } ?? .null }
}
