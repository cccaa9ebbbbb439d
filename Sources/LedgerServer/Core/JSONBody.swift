import LedgerModel

/// Typed, strict reading of a JSON request object: wrong types and unknown members are
/// collected into the `fields` map of one `validation_failed` error.
struct JSONBody {
    let object: JSONObject
    private(set) var errors: [String: String] = [:]
    private let prefix: String

    init(_ object: JSONObject, prefix: String = "") {
        self.object = object
        self.prefix = prefix
    }

    /// Parses a request body that must be a JSON object.
    static func parse(_ bytes: [UInt8]) throws -> JSONBody {
        if bytes.isEmpty { throw APIError.invalidJSON("The request body is empty; a JSON object is required.") }
        let value: JSONValue
        do { value = try JSONValue.parse(bytes) } catch {
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

    /// Records an error for every member not in `allowed`.
    mutating func allowOnly(_ allowed: Set<String>) {
        for k in object.keys where !allowed.contains(k) { fail(k, "is not a known field") }
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
            fail(key, n.contains(".") || n.lowercased().contains("e") ? "must be an integer" : "is out of the 64-bit integer range")
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
        guard let u = LedgerIDs.parse(s) else { fail(key, "must be a UUID"); return nil }
        return u.lowercased
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

    /// Throws `validation_failed` with every collected field error.
    func check() throws {
        if !errors.isEmpty { throw APIError.validation(errors) }
    }
}
