/// A JSON document as a value, keeping object key order and exact integers.
/// Parsing is strict (RFC 8259): invalid UTF-8, duplicate keys, trailing data,
/// lone surrogates and nesting deeper than 64 are errors.
public enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    /// An integer that fits Int64 exactly.
    case int(Int64)
    /// Any other number, kept as its source text (fractions, exponents, huge integers).
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// Parses a complete document from UTF-8 bytes.
    public static func parse(_ bytes: [UInt8]) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        return try parser.parseDocument()
    }

    /// Parses a complete document whose objects have at most `maxObjectMembers` members
    /// each: the first object past it stops the parse at once, with an error whose
    /// `tooManyMembers` is set.
    public static func parse(_ bytes: [UInt8], maxObjectMembers: Int) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: bytes)
        parser.maxObjectMembers = maxObjectMembers
        return try parser.parseDocument()
    }

    public static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    public subscript(_ key: String) -> JSONValue? {
        if case .object(let o) = self { return o[key] }
        return nil
    }

    public var objectValue: JSONObject? { if case .object(let o) = self { return o }; return nil }
    public var stringValue: String? { if case .string(let s) = self { return s }; return nil }
    public var intValue: Int64? { if case .int(let i) = self { return i }; return nil }
    public var boolValue: Bool? { if case .bool(let b) = self { return b }; return nil }
    public var arrayValue: [JSONValue]? { if case .array(let a) = self { return a }; return nil }
    public var isNull: Bool { self == .null }

    /// The JSON type name, for error messages ("string", "integer", …).
    public var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .int: return "integer"
        case .number: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }

    /// Compact UTF-8 serialization.
    public func serialized() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out)
        return out
    }

    public var serializedString: String { String(decoding: serialized(), as: UTF8.self) }

    public func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(literal: "null")
        case .bool(let b): out.append(literal: b ? "true" : "false")
        case .int(let i): JSONValue.writeInt(i, into: &out)
        case .number(let n): out.append(utf8: n)
        case .string(let s): JSONValue.writeString(s, into: &out)
        case .array(let a):
            out.append(91)
            for (i, v) in a.enumerated() {
                if i > 0 { out.append(44) }
                v.write(into: &out)
            }
            out.append(93)
        case .object(let o):
            out.append(123)
            for (i, (k, v)) in o.pairs.enumerated() {
                if i > 0 { out.append(44) }
                JSONValue.writeString(k, into: &out)
                out.append(58)
                v.write(into: &out)
            }
            out.append(125)
        }
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// Appends the decimal digits of `value` (with `-` when negative), as `String(value)`
    /// spells it, without building a string.
    public static func writeInt(_ value: Int64, into out: inout [UInt8]) {
        if value < 0 { out.append(45) }
        var v = value.magnitude
        if v < 10 {
            out.append(UInt8(truncatingIfNeeded: 48 &+ v))
            return
        }
        // At most 20 digits (UInt64.max), written backwards into a fixed buffer.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { p in
            var i = 20
            while v > 0 {
                i -= 1
                p[i] = UInt8(truncatingIfNeeded: 48 &+ v % 10)
                v /= 10
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: p[i..<20]))
        }
    }

    /// Appends `s` as a JSON string literal.
    public static func writeString(_ s: String, into out: inout [UInt8]) {
        // Most strings (ids, names, timestamps) need no escape: scan the contiguous bytes
        // and append them with their quotes as one copy.
        var s = s
        let plain = s.withUTF8 { bytes -> Bool in
            if ByteWriter.needsJSONEscape(bytes) { return false }
            out.appendWriting(maxCount: bytes.count + 2) { w in
                w.put(34)
                w.put(bytes)
                w.put(34)
            }
            return true
        }
        if plain { return }
        out.append(34)
        for c in s.utf8 {
            switch c {
            case 34: out.append(92); out.append(34)
            case 92: out.append(92); out.append(92)
            case 10: out.append(92); out.append(110)
            case 13: out.append(92); out.append(114)
            case 9: out.append(92); out.append(116)
            case 0..<0x20:
                out.append(contentsOf: [92, 117, 48, 48, hexDigits[Int(c >> 4)], hexDigits[Int(c & 15)]])
            default: out.append(c)
            }
        }
        out.append(34)
    }
}

/// A JSON object: ordered key/value pairs with unique keys.
public struct JSONObject: Sendable, Equatable, ExpressibleByDictionaryLiteral {
    public private(set) var pairs: [(String, JSONValue)] = []

    public init() {}
    /// A literal's keys are written by hand and must be unique (checked in debug builds);
    /// records are built this way on every answer, so release builds skip the search.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        assert(Set(elements.map(\.0)).count == elements.count, "duplicate key in a JSON object literal")
        pairs = elements
    }

    public subscript(_ key: String) -> JSONValue? {
        get { pairs.first { $0.0 == key }?.1 }
        set {
            if let i = pairs.firstIndex(where: { $0.0 == key }) {
                if let newValue { pairs[i].1 = newValue } else { pairs.remove(at: i) }
            } else if let newValue {
                pairs.append((key, newValue))
            }
        }
    }

    /// An object of pairs whose keys the caller knows to be unique (taken as they are).
    public init(uniquePairs: [(String, JSONValue)]) {
        assert(Set(uniquePairs.map(\.0)).count == uniquePairs.count, "duplicate key in a JSON object")
        pairs = uniquePairs
    }

    public var keys: [String] { pairs.map(\.0) }
    public var count: Int { pairs.count }

    mutating func appendUnchecked(_ key: String, _ value: JSONValue) { pairs.append((key, value)) }

    mutating func reserveCapacity(_ n: Int) { pairs.reserveCapacity(n) }

    public static func == (a: JSONObject, b: JSONObject) -> Bool {
        a.pairs.count == b.pairs.count && zip(a.pairs, b.pairs).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }
}

/// Why a document is not valid JSON, with the byte offset.
public struct JSONParseError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public var offset: Int
    /// The document was refused because an object has more members than allowed.
    public var tooManyMembers = false
    public var description: String { "\(message) at byte \(offset)" }
}

struct JSONParser {
    let bytes: [UInt8]
    var i = 0
    var depth = 0
    static let maxDepth = 64
    var maxObjectMembers = Int.max

    init(bytes: [UInt8]) { self.bytes = bytes }

    func fail(_ m: String) -> JSONParseError { JSONParseError(message: m, offset: i) }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        // A UTF-8 byte order mark is not allowed by RFC 8259 for network JSON.
        skipWS()
        let v = try parseValue()
        skipWS()
        guard i == bytes.count else { throw fail("unexpected data after the JSON value") }
        return v
    }

    mutating func skipWS() {
        while i < bytes.count, bytes[i] == 32 || bytes[i] == 9 || bytes[i] == 10 || bytes[i] == 13 { i += 1 }
    }

    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard i < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[i] {
        case 123: return try parseObject()
        case 91: return try parseArray()
        case 34: return .string(try parseString())
        case 116: try literal("true"); return .bool(true)
        case 102: try literal("false"); return .bool(false)
        case 110: try literal("null"); return .null
        case 45, 48...57: return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    mutating func literal(_ word: StaticString) throws(JSONParseError) {
        let w = UnsafeBufferPointer(start: word.utf8Start, count: word.utf8CodeUnitCount)
        guard i + w.count <= bytes.count else { throw fail("invalid literal") }
        for k in 0..<w.count where bytes[i + k] != w[k] { throw fail("invalid literal") }
        i += w.count
    }

    mutating func parseObject() throws(JSONParseError) -> JSONValue {
        depth += 1
        guard depth <= Self.maxDepth else { throw fail("nesting too deep") }
        i += 1
        var obj = JSONObject()
        // Duplicate keys: a look through the keys so far while there are few (most objects;
        // a set costs an allocation and a hash per key), a set from the 17th key on.
        var seen: Set<String>?
        skipWS()
        if i < bytes.count && bytes[i] == 125 { i += 1; depth -= 1; return .object(obj) }
        // Room for a few members at once (most request bodies have two to five), instead
        // of growing the array at the first and second.
        obj.reserveCapacity(4)
        while true {
            skipWS()
            guard i < bytes.count, bytes[i] == 34 else { throw fail("expected a string key") }
            guard obj.count < maxObjectMembers else {
                var e = fail("an object has more than \(maxObjectMembers) members")
                e.tooManyMembers = true
                throw e
            }
            let key = try parseString()
            let duplicate: Bool
            if seen != nil {
                duplicate = !seen!.insert(key).inserted
            } else if obj.count < 16 {
                duplicate = obj.pairs.contains { $0.0 == key }
            } else {
                var keys = Set(obj.pairs.map(\.0))
                duplicate = !keys.insert(key).inserted
                seen = keys
            }
            guard !duplicate else { throw fail("duplicate key \"\(key)\"") }
            skipWS()
            guard i < bytes.count, bytes[i] == 58 else { throw fail("expected ':'") }
            i += 1
            skipWS()
            obj.appendUnchecked(key, try parseValue())
            skipWS()
            guard i < bytes.count else { throw fail("unexpected end of input") }
            if bytes[i] == 44 { i += 1; continue }
            if bytes[i] == 125 { i += 1; break }
            throw fail("expected ',' or '}'")
        }
        depth -= 1
        return .object(obj)
    }

    mutating func parseArray() throws(JSONParseError) -> JSONValue {
        depth += 1
        guard depth <= Self.maxDepth else { throw fail("nesting too deep") }
        i += 1
        var arr: [JSONValue] = []
        skipWS()
        if i < bytes.count && bytes[i] == 93 { i += 1; depth -= 1; return .array(arr) }
        while true {
            skipWS()
            arr.append(try parseValue())
            skipWS()
            guard i < bytes.count else { throw fail("unexpected end of input") }
            if bytes[i] == 44 { i += 1; continue }
            if bytes[i] == 93 { i += 1; break }
            throw fail("expected ',' or ']'")
        }
        depth -= 1
        return .array(arr)
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = i
        if bytes[i] == 45 { i += 1 }
        guard i < bytes.count, bytes[i] >= 48 && bytes[i] <= 57 else { throw fail("invalid number") }
        if bytes[i] == 48 {
            i += 1
            if i < bytes.count, bytes[i] >= 48 && bytes[i] <= 57 { throw fail("leading zeros are not allowed") }
        } else {
            while i < bytes.count, bytes[i] >= 48 && bytes[i] <= 57 { i += 1 }
        }
        var isInteger = true
        if i < bytes.count, bytes[i] == 46 {
            isInteger = false
            i += 1
            guard i < bytes.count, bytes[i] >= 48 && bytes[i] <= 57 else { throw fail("invalid number") }
            while i < bytes.count, bytes[i] >= 48 && bytes[i] <= 57 { i += 1 }
        }
        if i < bytes.count, bytes[i] == 101 || bytes[i] == 69 {
            isInteger = false
            i += 1
            if i < bytes.count, bytes[i] == 43 || bytes[i] == 45 { i += 1 }
            guard i < bytes.count, bytes[i] >= 48 && bytes[i] <= 57 else { throw fail("invalid number") }
            while i < bytes.count, bytes[i] >= 48 && bytes[i] <= 57 { i += 1 }
        }
        let text = String(decoding: bytes[start..<i], as: UTF8.self)
        if isInteger, let v = Int64(text) { return .int(v) }
        return .number(text)
    }

    mutating func hex4() throws(JSONParseError) -> UInt32 {
        guard i + 4 <= bytes.count else { throw fail("invalid \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let c = bytes[i]
            let d: UInt32
            switch c {
            case 48...57: d = UInt32(c - 48)
            case 65...70: d = UInt32(c - 55)
            case 97...102: d = UInt32(c - 87)
            default: throw fail("invalid \\u escape")
            }
            v = v << 4 | d
            i += 1
        }
        return v
    }

    mutating func parseString() throws(JSONParseError) -> String {
        i += 1
        // Most strings (keys, ids, notes) are printable ASCII without escapes: read in
        // place, no byte-by-byte copy. Anything else goes on below from where this stopped.
        let start = i
        while i < bytes.count, bytes[i] >= 0x20, bytes[i] < 0x80, bytes[i] != 34, bytes[i] != 92 { i += 1 }
        if i < bytes.count, bytes[i] == 34 {
            i += 1
            return String(decoding: bytes[start..<(i - 1)], as: UTF8.self)
        }
        var out = Array(bytes[start..<i])
        while true {
            guard i < bytes.count else { throw fail("unterminated string") }
            let c = bytes[i]
            switch c {
            case 34:
                i += 1
                return String(decoding: out, as: UTF8.self)
            case 92:
                i += 1
                guard i < bytes.count else { throw fail("unterminated string") }
                let e = bytes[i]
                i += 1
                switch e {
                case 34: out.append(34)
                case 92: out.append(92)
                case 47: out.append(47)
                case 98: out.append(8)
                case 102: out.append(12)
                case 110: out.append(10)
                case 114: out.append(13)
                case 116: out.append(9)
                case 117:
                    var scalar = try hex4()
                    if scalar >= 0xD800 && scalar <= 0xDBFF {
                        guard i + 2 <= bytes.count, bytes[i] == 92, bytes[i + 1] == 117 else { throw fail("lone surrogate") }
                        i += 2
                        let low = try hex4()
                        guard low >= 0xDC00 && low <= 0xDFFF else { throw fail("lone surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if scalar >= 0xDC00 && scalar <= 0xDFFF {
                        throw fail("lone surrogate")
                    }
                    out.append(contentsOf: Array(String(Unicode.Scalar(scalar)!).utf8))
                default: throw fail("invalid escape")
                }
            case 0..<0x20:
                throw fail("control character in string")
            case 0x80...:
                let len = try validateUTF8(at: i)
                out.append(contentsOf: bytes[i..<(i + len)])
                i += len
            default:
                out.append(c)
                i += 1
            }
        }
    }

    /// Length of the valid UTF-8 sequence at `p`, or an error (overlong, surrogate, > U+10FFFF).
    func validateUTF8(at p: Int) throws(JSONParseError) -> Int {
        let b0 = bytes[p]
        func cont(_ k: Int) -> Bool { p + k < bytes.count && bytes[p + k] & 0xC0 == 0x80 }
        let bad = JSONParseError(message: "invalid UTF-8", offset: p)
        switch b0 {
        case 0xC2...0xDF:
            guard cont(1) else { throw bad }
            return 2
        case 0xE0...0xEF:
            guard cont(1), cont(2) else { throw bad }
            let b1 = bytes[p + 1]
            if b0 == 0xE0 && b1 < 0xA0 { throw bad }
            if b0 == 0xED && b1 >= 0xA0 { throw bad }
            return 3
        case 0xF0...0xF4:
            guard cont(1), cont(2), cont(3) else { throw bad }
            let b1 = bytes[p + 1]
            if b0 == 0xF0 && b1 < 0x90 { throw bad }
            if b0 == 0xF4 && b1 >= 0x90 { throw bad }
            return 4
        default:
            throw bad
        }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByBooleanLiteral, ExpressibleByNilLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral {
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A float literal is kept as its decimal text (money never goes through here).
    public init(floatLiteral value: Double) { self = .number(String(value)) }
}
