/// Why a compact JWS was refused before any business rule was applied.
///
/// Each case maps to a stable machine-readable ``code`` that the server returns as the
/// `code` of its 422 problem response.
public enum JWSError: Error, Equatable, Sendable {
    /// The input is not a well-formed compact JWS (segments, base64url, JSON), with a reason.
    case malformed(String)
    /// The protected header's `alg` is missing or is not exactly `ES256`.
    case unsupportedAlgorithm
    /// The `x5c` chain is missing, has the wrong shape, or does not verify to a trusted root.
    case invalidChain(String)
    /// The ES256 signature does not verify with the leaf certificate's P-256 key.
    case invalidSignature

    /// The stable error code: `malformed`, `unsupported_algorithm`, `invalid_chain`, `invalid_signature`.
    public var code: String {
        switch self {
        case .malformed: return "malformed"
        case .unsupportedAlgorithm: return "unsupported_algorithm"
        case .invalidChain: return "invalid_chain"
        case .invalidSignature: return "invalid_signature"
        }
    }
}
