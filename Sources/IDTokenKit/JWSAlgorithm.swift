/// The JWS algorithms an ID token may be signed with. Every other `alg` (`none`, any `HS*`,
/// `PS*`, `RS384`, …) is refused.
public enum JWSAlgorithm: String, Sendable, Hashable, CaseIterable {
    /// RSASSA-PKCS1-v1_5 with SHA-256 (RFC 7518 section 3.3), RSA keys of 2048 bits or more.
    case rs256 = "RS256"
    /// ECDSA on P-256 with SHA-256 (RFC 7518 section 3.4), raw `r ‖ s` signatures.
    case es256 = "ES256"
}
