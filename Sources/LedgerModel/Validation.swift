/// Where a transaction came from.
public enum TransactionSource: String, Sendable, CaseIterable, Codable {
    case manual, siri, api, `import`, allowance
}

/// The field rules of API.md, shared by server and clients. Each check returns the cleaned
/// value or a message for the `fields` map of a `validation_failed` problem.
public enum Validation {
    public static let maxNameLength = 100
    public static let maxNoteLength = 500

    /// A name: 1…100 Unicode scalars after trimming white space, no control characters.
    public static func name(_ raw: String) -> Result<String, FieldError> {
        let trimmed = raw.trimmingWhitespace()
        if trimmed.isEmpty { return .failure(FieldError("must not be empty")) }
        if trimmed.unicodeScalars.count > maxNameLength { return .failure(FieldError("must be at most \(maxNameLength) characters")) }
        if trimmed.unicodeScalars.contains(where: isControl) { return .failure(FieldError("must not contain control characters")) }
        return .success(trimmed)
    }

    /// A note: 0…500 Unicode scalars, no control characters.
    public static func note(_ raw: String) -> Result<String, FieldError> {
        if raw.unicodeScalars.count > maxNoteLength { return .failure(FieldError("must be at most \(maxNoteLength) characters")) }
        if raw.unicodeScalars.contains(where: isControl) { return .failure(FieldError("must not contain control characters")) }
        return .success(raw)
    }

    /// A transaction amount: non-zero, |amount| ≤ 100,000,000,000.
    public static func amount(_ cents: Int64) -> Result<Int64, FieldError> {
        if cents == 0 { return .failure(FieldError("must not be zero")) }
        if cents.magnitude > UInt64(Cents.maxTransactionMagnitude) {
            return .failure(FieldError("magnitude must be at most \(Cents.maxTransactionMagnitude)"))
        }
        return .success(cents)
    }

    /// An account handle: 3…32 of a-z 0-9 _ -.
    public static func handle(_ raw: String) -> Result<String, FieldError> {
        let ok = (3...32).contains(raw.utf8.count) && raw.utf8.allSatisfy {
            ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 95 || $0 == 45
        }
        return ok ? .success(raw) : .failure(FieldError("must be 3 to 32 characters of a-z, 0-9, _ and -"))
    }

    /// An ISO 4217 currency code: three uppercase letters.
    public static func currency(_ raw: String) -> Result<String, FieldError> {
        let ok = raw.utf8.count == 3 && raw.utf8.allSatisfy { $0 >= 65 && $0 <= 90 }
        return ok ? .success(raw) : .failure(FieldError("must be an ISO 4217 code such as USD"))
    }

    static func isControl(_ s: Unicode.Scalar) -> Bool {
        s.value < 0x20 || (s.value >= 0x7F && s.value < 0xA0) || s.value == 0x2028 || s.value == 0x2029
    }
}

/// A field's validation message.
public struct FieldError: Error, Equatable, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
}

extension String {
    /// The string without leading and trailing white space and newlines.
    public func trimmingWhitespace() -> String {
        let scalars = unicodeScalars
        guard let start = scalars.firstIndex(where: { !$0.properties.isWhitespace }) else { return "" }
        let end = scalars.lastIndex(where: { !$0.properties.isWhitespace })!
        return String(scalars[start...end])
    }
}
