import LedgerModel

/// Typed, strict reading of a JSON request object: wrong types and unknown members are
/// collected into the `fields` map of one `validation_failed` error.
struct JSONBody {
    let object: JSONObject
    private(set) var errors: [String: String] = [:]
    /// Invalid fields found but not named in `errors`.
    private(set) var unlisted = 0
    private let prefix: String

    init(_ object: JSONObject, prefix: String = "") {
        self.object = object
        self.prefix = prefix
    }

    /// Most members of any object in a request body: more than any request type has, so an
    /// object past it is refused as soon as the parser reaches it.
    static let maxMembers = 64

    /// Parses a request body that must be a JSON object.
    static func parse(_ bytes: [UInt8]) throws -> JSONBody {
        if bytes.isEmpty { throw APIError.invalidJSON("The request body is empty; a JSON object is required.") }
        let value: JSONValue
        do { value = try JSONValue.parse(bytes, maxObjectMembers: maxMembers) } catch {
            if error.tooManyMembers {
                var e = APIError.validation("body", "has an object with more than \(maxMembers) members")
                e.detail = "An object in the body has more than \(maxMembers) members; no request has that many."
                throw e
            }
            throw APIError.invalidJSON("The body is not valid JSON: \(error.description).")
        }
        guard case .object(let o) = value else {
            throw APIError.invalidJSON("The body must be a JSON object, not \(value.typeName).")
        }
        return JSONBody(o)
    }

    mutating func fail(_ key: String, _ message: String) {
        if errors[prefix + key] == nil { errors[prefix + key] = message }
    }

    /// Records an error for the first few members not in `allowed` (`APIError.listedFields`;
    /// the problem says how many more there are).
    /// `allowed` is a handful of names: a linear search beats building a Set per request.
    mutating func allowOnly(_ allowed: [String]) {
        // Over the pairs in place (`keys` would copy them into an array first).
        var unknown = 0
        for (k, _) in object.pairs where !allowed.contains(k) {
            unknown += 1
            if unknown <= APIError.listedFields { fail(k, "is not a known field") }
        }
        if unknown > APIError.listedFields { unlisted += unknown - APIError.listedFields }
    }

    func has(_ key: String) -> Bool { object[key] != nil }

    mutating func string(_ key: String, required: Bool = false) -> String? {
        switch object[key] {
        case nil, .null?:
            if required { fail(key, "is required") }
            return nil
        case .string(let s)?: return s
        case let v?: fail(key, "must be a string, not \(v.typeName)"); return nil
        }
    }

    mutating func int(_ key: String, required: Bool = false) -> Int64? {
        switch object[key] {
        case nil, .null?:
            if required { fail(key, "is required") }
            return nil
        case .int(let i)?: return i
        case .number(let n)?:
            if let v = JSONBody.exactInteger(n) { return v }
            fail(key, JSONBody.isIntegral(n) ? "is out of the 64-bit integer range" : "must be an integer")
            return nil
        case let v?: fail(key, "must be an integer, not \(v.typeName)"); return nil
        }
    }

    mutating func bool(_ key: String) -> Bool? {
        switch object[key] {
        case nil, .null?: return nil
        case .bool(let b)?: return b
        case let v?: fail(key, "must be a boolean, not \(v.typeName)"); return nil
        }
    }

    mutating func uuid(_ key: String, required: Bool = false) -> String? {
        guard let s = string(key, required: required) else { return nil }
        guard let id = LedgerIDs.lowercaseCanonical(s) else { fail(key, "must be a UUID"); return nil }
        return id
    }

    mutating func timestamp(_ key: String, required: Bool = false) -> Int64? {
        guard let s = string(key, required: required) else { return nil }
        guard let t = Timestamp.parse(s) else { fail(key, "must be an RFC 3339 timestamp"); return nil }
        return t
    }

    mutating func name(_ key: String, required: Bool = false) -> String? {
        guard let s = string(key, required: required) else { return nil }
        switch Validation.name(s) {
        case .success(let v): return v
        case .failure(let e): fail(key, e.message); return nil
        }
    }

    /// The Int64 value of a JSON number written with a fraction or exponent that is still a
    /// whole number (`500.0`, `5e2`), as JSON Schema counts integers; computed without floats.
    static func exactInteger(_ text: String) -> Int64? {
        guard let (digits, exponent, negative) = decompose(text) else { return nil }
        var d = digits
        var e = exponent
        if d.isEmpty { return 0 }
        while e < 0 {
            guard d.last == "0" else { return nil }
            d.removeLast(); e += 1
        }
        if d.isEmpty { return 0 }
        guard e <= 19 else { return nil }
        d += String(repeating: "0", count: e)
        return Int64((negative ? "-" : "") + d)
    }

    static func isIntegral(_ text: String) -> Bool {
        guard let (digits, exponent, _) = decompose(text) else { return false }
        if exponent >= 0 { return true }
        return digits.suffix(-exponent).allSatisfy { $0 == "0" }
    }

    /// Significant digits (leading zeros removed), decimal exponent and sign of a JSON number.
    private static func decompose(_ text: String) -> (String, Int, Bool)? {
        var s = Substring(text)
        let negative = s.hasPrefix("-")
        if negative { s = s.dropFirst() }
        var exponent = 0
        if let e = s.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            guard let x = Int(s[s.index(after: e)...].replacingOccurrences(of: "+", with: "")), x.magnitude < 10_000 else { return nil }
            exponent = x
            s = s[..<e]
        }
        var digits = String(s)
        if let dot = s.firstIndex(of: ".") {
            let frac = s[s.index(after: dot)...]
            digits = String(s[..<dot]) + frac
            exponent -= frac.count
        }
        while digits.hasPrefix("0") && digits.count > 1 { digits.removeFirst() }
        if digits == "0" { digits = "" }
        return (digits, exponent, negative)
    }

    /// Throws `validation_failed` with every collected field error.
    func check() throws {
        if !errors.isEmpty { throw APIError.validation(errors, unlisted: unlisted) }
    }
}
