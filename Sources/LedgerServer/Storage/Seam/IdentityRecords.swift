import LedgerModel

/// An OpenID Connect identity linked to an account: the pair (`issuer`, `subject`) is
/// unique across the server, so one identity reaches one account.
struct IdentityRecord: Sendable, Equatable {
    let id: String
    let accountId: String
    /// The provider's name when it was linked (`apple`, or an `--oidc-provider` name).
    let provider: String
    let issuer: String
    let subject: String
    /// Milliseconds since 1970.
    let linkedAt: Int64
}

/// A nonce of an accepted ID token (`IDTokenVerifier`'s SHA-256, lowercase hex), kept
/// until `expiresAt` (ms) so a second request with it is refused.
struct NonceRecord: Sendable, Equatable {
    let hash: String
    let expiresAt: Int64

    /// Expired nonces forgotten per nonce remembered: enough to keep up with any rate of
    /// sign-ins, few enough to cost nothing.
    static let expiredPerInsert = 16
}

/// An Apple refresh token, sealed (`TokenSealer`), kept so it can be revoked when the
/// account is deleted or the identity unlinked.
struct AppleTokenRecord: Sendable, Equatable {
    let id: String
    let accountId: String
    /// The Apple identity it came with; nil once that identity was unlinked.
    let identityId: String?
    /// The `client_id` Apple issued it to (the ID token's audience).
    let clientId: String
    /// AES-256-GCM: 12-byte nonce ‖ ciphertext ‖ 16-byte tag.
    let sealed: [UInt8]
    /// Which key sealed it (`TokenSealer.keyId`).
    let keyId: String
    let createdAt: Int64
    /// nil: kept. Otherwise queued for `/auth/revoke`, due at this time (ms).
    let revokeAfter: Int64?
    /// Revocation attempts made so far.
    let attempts: Int
}

/// Why an identity operation was refused, in the ledger's terms; `AuthRoutes` and
/// `IdentityRoutes` choose the HTTP answers.
enum IdentityStorageError: Error, Sendable, Equatable {
    /// The identity is linked to another account.
    case identityInUse
    /// No identity with that id belongs to the caller.
    case identityNotFound
    /// The identity is linked to no account (sign-in without a handle).
    case identityNotLinked
    /// The token's nonce was accepted before (by this or another process).
    case nonceReplayed
    /// The storage conformer has no identity tables (never the case for the server's own).
    case unsupported
}
