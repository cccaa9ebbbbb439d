import LedgerModel

/// An OpenID Connect identity linked to an account: the pair (`issuer`, `subject`) is
/// unique across the server, so one identity reaches one account.
package struct IdentityRecord: Sendable, Equatable {
    package let id: String
    package let accountId: String
    /// The provider's name when it was linked (`apple`, or an `--oidc-provider` name).
    package let provider: String
    package let issuer: String
    package let subject: String
    /// Milliseconds since 1970.
    package let linkedAt: Int64

    package init(id: String, accountId: String, provider: String, issuer: String, subject: String, linkedAt: Int64) {
        self.id = id
        self.accountId = accountId
        self.provider = provider
        self.issuer = issuer
        self.subject = subject
        self.linkedAt = linkedAt
    }
}

/// A nonce of an accepted ID token (`IDTokenVerifier`'s SHA-256, lowercase hex), kept
/// until `expiresAt` (ms) so a second request with it is refused.
package struct NonceRecord: Sendable, Equatable {
    package let hash: String
    package let expiresAt: Int64

    /// Expired nonces forgotten per nonce remembered: enough to keep up with any rate of
    /// sign-ins, few enough to cost nothing.
    package static let expiredPerInsert = 16

    package init(hash: String, expiresAt: Int64) {
        self.hash = hash
        self.expiresAt = expiresAt
    }
}

/// An Apple refresh token, sealed (`TokenSealer`), kept so it can be revoked when the
/// account is deleted or the identity unlinked.
package struct AppleTokenRecord: Sendable, Equatable {
    package let id: String
    package let accountId: String
    /// The Apple identity it came with; nil once that identity was unlinked.
    package let identityId: String?
    /// The `client_id` Apple issued it to (the ID token's audience).
    package let clientId: String
    /// AES-256-GCM: 12-byte nonce ‖ ciphertext ‖ 16-byte tag.
    package let sealed: [UInt8]
    /// Which key sealed it (`TokenSealer.keyId`).
    package let keyId: String
    package let createdAt: Int64
    /// nil: kept. Otherwise queued for `/auth/revoke`, due at this time (ms).
    package let revokeAfter: Int64?
    /// Revocation attempts made so far.
    package let attempts: Int

    package init(id: String, accountId: String, identityId: String?, clientId: String, sealed: [UInt8], keyId: String, createdAt: Int64, revokeAfter: Int64?, attempts: Int) {
        self.id = id
        self.accountId = accountId
        self.identityId = identityId
        self.clientId = clientId
        self.sealed = sealed
        self.keyId = keyId
        self.createdAt = createdAt
        self.revokeAfter = revokeAfter
        self.attempts = attempts
    }
}

/// Why an identity operation was refused, in the ledger's terms; `AuthRoutes` and
/// `IdentityRoutes` choose the HTTP answers.
package enum IdentityStorageError: Error, Sendable, Equatable {
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
