import Foundation
import LedgerModel

/// What a verified ID token says about its subject: the identity is the pair
/// (``issuer``, ``subject``).
public struct VerifiedIDToken: Sendable, Equatable {
    /// The provider's name (`apple`, or an `--oidc-provider` name).
    public var provider: String
    /// `iss`: exactly the provider's issuer.
    public var issuer: String
    /// `sub`: the provider's stable identifier of the user, never empty.
    public var subject: String
    /// The configured audience `aud` holds (the first one in configuration order).
    public var audience: String
    /// `email`, when the token carries one (Apple's may be a relay address).
    public var email: String?
    /// `email_verified` (a boolean, or Apple's strings `"true"`/`"false"`), when present.
    public var emailVerified: Bool?
    /// `exp`.
    public var expiresAt: Date
    /// `iat`.
    public var issuedAt: Date
    /// The `nonce` claim, when the token carries one as a string.
    public var nonce: String?
    /// The `kid` of the key that verified the token.
    public var keyID: String
    /// Every claim, for what the fields above do not cover (`name`, `preferred_username`, …).
    public var claims: JSONObject
}
