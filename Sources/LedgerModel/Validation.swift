/// Where a transaction came from.
public enum TransactionSource: String, Sendable, CaseIterable, Codable {
    case manual, siri, api, `import`, allowance, interest
}

/// The field rules of API.md, shared by server and clients. Each check returns the cleaned
/// value or a message for the `fields` map of a `validation_failed` problem.
public enum Validation {
    public static let maxNameLength = 100
    public static let maxNoteLength = 500

    /// A name: 1…100 Unicode scalars after trimming white space, no control characters,
    /// beginning with a visible character (so never made only of invisible ones, and never
    /// "Ada" with an invisible character in front), and no bidirectional overrides or
    /// isolates (which make a name display as other text than it holds).
    public static func name(_ raw: String) -> Result<String, FieldError> {
        let trimmed = raw.trimmingWhitespace()
        if trimmed.isEmpty { return .failure(FieldError("must not be empty")) }
        if trimmed.unicodeScalars.count > maxNameLength { return .failure(FieldError("must be at most \(maxNameLength) characters")) }
        if trimmed.unicodeScalars.contains(where: isControl) { return .failure(FieldError("must not contain control characters")) }
        if trimmed.unicodeScalars.contains(where: isBidiOverrideOrIsolate) {
            return .failure(FieldError("must not contain bidirectional override or isolate characters (U+202A–U+202E, U+2066–U+2069)"))
        }
        if isInvisible(trimmed.unicodeScalars.first!) {
            return .failure(FieldError("must begin with a visible character, not a zero-width, format or other invisible one"))
        }
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

    /// An ISO 4217 code of a currency in circulation (`CurrencyCodes.active`), upper case.
    public static func currency(_ raw: String) -> Result<String, FieldError> {
        CurrencyCodes.active.contains(raw) ? .success(raw)
            : .failure(FieldError("must be the ISO 4217 code of a currency in circulation, in upper case, such as USD"))
    }

    static func isControl(_ s: Unicode.Scalar) -> Bool {
        s.value < 0x20 || (s.value >= 0x7F && s.value < 0xA0) || s.value == 0x2028 || s.value == 0x2029
    }

    /// LRE, RLE, PDF, LRO, RLO (U+202A–U+202E) and LRI, RLI, FSI, PDI (U+2066–U+2069).
    static func isBidiOverrideOrIsolate(_ s: Unicode.Scalar) -> Bool {
        (0x202A...0x202E).contains(s.value) || (0x2066...0x2069).contains(s.value)
    }

    /// Scalars that show nothing by themselves: general category Cf (format: U+200B ZERO
    /// WIDTH SPACE, U+FEFF, the bidirectional controls, tags, …) and the other
    /// default-ignorable code points (U+3164 HANGUL FILLER, variation selectors, …) of
    /// Unicode 15.1, and U+2800 BRAILLE PATTERN BLANK. Written out so the rule does not move
    /// with the Unicode tables of the toolchain; openapi.yaml's `Name` pattern has the same ranges.
    public static let invisibleRanges: [ClosedRange<UInt32>] = [
        0xAD...0xAD, 0x34F...0x34F, 0x600...0x605, 0x61C...0x61C, 0x6DD...0x6DD, 0x70F...0x70F,
        0x890...0x891, 0x8E2...0x8E2, 0x115F...0x1160, 0x17B4...0x17B5, 0x180B...0x180F,
        0x200B...0x200F, 0x202A...0x202E, 0x2060...0x206F, 0x2800...0x2800, 0x3164...0x3164,
        0xFE00...0xFE0F, 0xFEFF...0xFEFF, 0xFFA0...0xFFA0, 0xFFF0...0xFFFB, 0x110BD...0x110BD,
        0x110CD...0x110CD, 0x13430...0x1343F, 0x1BCA0...0x1BCA3, 0x1D173...0x1D17A, 0xE0000...0xE0FFF,
    ]

    static func isInvisible(_ s: Unicode.Scalar) -> Bool {
        invisibleRanges.contains { $0.contains(s.value) }
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
