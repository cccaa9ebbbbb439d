/// One result row, values in column order.
public struct SQLiteRow: Sendable, Equatable {
    public var values: [SQLiteValue]

    public init(values: [SQLiteValue]) { self.values = values }

    public subscript(_ i: Int) -> SQLiteValue { values[i] }

    /// The integer in column `i` (0 for NULL; text is not converted; a real is truncated
    /// and clamped to the Int64 range, NaN is 0 — never a trap).
    public func int(_ i: Int) -> Int64 {
        if case .integer(let v) = values[i] { return v }
        if case .real(let d) = values[i] {
            if d.isNaN { return 0 }
            if d >= 9_223_372_036_854_775_807.0 { return .max }
            if d <= -9_223_372_036_854_775_808.0 { return .min }
            return Int64(d)
        }
        return 0
    }

    public func optionalInt(_ i: Int) -> Int64? {
        if case .null = values[i] { return nil }
        return int(i)
    }

    public func bool(_ i: Int) -> Bool { int(i) != 0 }

    /// The text in column `i` ("" for NULL).
    public func string(_ i: Int) -> String { optionalString(i) ?? "" }

    public func optionalString(_ i: Int) -> String? {
        switch values[i] {
        case .text(let s): return s
        case .integer(let v): return String(v)
        case .real(let d): return String(d)
        case .blob(let b): return String(decoding: b, as: UTF8.self)
        case .null: return nil
        }
    }

    public func blob(_ i: Int) -> [UInt8] {
        switch values[i] {
        case .blob(let b): return b
        case .text(let s): return Array(s.utf8)
        default: return []
        }
    }

    public func isNull(_ i: Int) -> Bool { values[i] == .null }
}
