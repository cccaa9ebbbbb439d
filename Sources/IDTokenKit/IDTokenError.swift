/// Why an ID token was refused. Each case is one `reason` of the `invalid_id_token` problem
/// (API.md, "Identity"); ``reason`` is that member's value.
public enum IDTokenError: String, Error, Sendable, CaseIterable, CustomStringConvertible {
    /// Not a compact JWT within the size limit, not strict base64url, not JSON objects
    /// without duplicate members, a `crit` header, a required claim missing or mistyped.
    case malformed
    /// `alg` is not `RS256` or `ES256` (so `none` and every `HS*`), or is not the algorithm
    /// pinned to the key that `kid` names.
    case unsupportedAlgorithm = "unsupported_algorithm"
    /// `kid` is missing or names no key of the provider's key set, even after a refresh.
    case unknownKey = "unknown_key"
    /// The signature does not verify with the key `kid` names.
    case signature
    /// `iss` is not exactly the provider's issuer.
    case issuer
    /// `aud` holds none of the provider's audiences.
    case audience
    /// `exp` is past, beyond the leeway.
    case expired
    /// `nbf` or `iat` is in the future, beyond the leeway.
    case notYetValid = "not_yet_valid"
    /// A nonce was sent and the token's `nonce` claim is missing, is neither the nonce nor
    /// its SHA-256, or the nonce was already used.
    case nonce

    /// The problem's `reason` member: `malformed`, `unsupported_algorithm`, `unknown_key`,
    /// `signature`, `issuer`, `audience`, `expired`, `not_yet_valid` or `nonce`.
    public var reason: String { rawValue }

    public var description: String { rawValue }
}
