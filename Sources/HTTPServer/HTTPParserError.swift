/// Why the request parser refused its input. Each case maps to one status and problem `code`.
public enum HTTPParserError: Error, Equatable, Sendable {
    /// Malformed or ambiguous framing (400 `bad_request`); the text says what was wrong.
    case badRequest(String)
    /// The request head exceeded the configured limit (431 `header_too_large`).
    case headTooLarge
    /// The body exceeds the configured limit (413 `payload_too_large`).
    case bodyTooLarge

    /// The HTTP status this error is answered with.
    public var status: Int {
        switch self {
        case .badRequest: return 400
        case .headTooLarge: return 431
        case .bodyTooLarge: return 413
        }
    }

    /// A human-readable explanation for the problem `detail`.
    public var detail: String {
        switch self {
        case .badRequest(let why): return why
        case .headTooLarge: return "The request head is too large."
        case .bodyTooLarge: return "The request body is too large."
        }
    }
}
