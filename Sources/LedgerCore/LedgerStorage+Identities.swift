import Foundation
import LedgerModel

/// Identity primitives every storage conformer's reads offer besides `LedgerReading`
/// (a protocol of its own, so the ledger's seam stays as it is).
package protocol IdentityReading {
    /// The identity (`issuer`, `subject`), whoever it is linked to.
    func identity(issuer: String, subject: String) throws -> IdentityRecord?
    /// The account's identities, oldest link first (then by id).
    func identities(account: String) throws -> [IdentityRecord]
    /// Whether `hash` is remembered as an accepted nonce that has not expired at `now` (ms).
    func nonceRecorded(hash: String, now: Int64) throws -> Bool
    /// Apple refresh tokens queued for revocation and due at `now`, sealed under `keyId`,
    /// the earliest due first, at most `limit`.
    func appleRevocationsDue(now: Int64, keyId: String, limit: Int) throws -> [AppleTokenRecord]
    /// Every Apple refresh token row of the account, kept or queued.
    func appleTokens(account: String) throws -> [AppleTokenRecord]
}

/// Identity primitives of a write transaction. No checking of their own beyond the
/// database's constraints: callers go through the rules below.
package protocol IdentityWriting: IdentityReading {
    /// Throws (a unique-key race the storage runs again) when (`issuer`, `subject`) is taken.
    func insertIdentity(_ identity: IdentityRecord) throws
    /// Whether the account had an identity with that id (it is gone).
    func deleteIdentity(id: String, account: String) throws -> IdentityRecord?
    /// Removes every identity of the account; answers how many there were.
    func deleteIdentities(account: String) throws -> Int
    /// Remembers a nonce unless an unexpired one with the same hash is remembered (then
    /// false, nothing changes); forgets a few expired nonces on the way.
    func recordNonce(_ nonce: NonceRecord, now: Int64) throws -> Bool
    /// Keeps `token`, replacing any kept (not queued) token of the same account and client.
    func storeAppleToken(_ token: AppleTokenRecord) throws
    /// Queues the account's kept Apple tokens for revocation, due at `at`; how many.
    func queueAppleRevocations(account: String, at: Int64) throws -> Int
    /// Queues the kept Apple tokens that came with `identity` (unlinked), due at `at`.
    func queueAppleRevocations(identity: String, at: Int64) throws -> Int
    /// Takes a queued token for one attempt: moves its due time from `due` to `until` when
    /// it is still `due` (no other process took it); whether it did.
    func claimAppleRevocation(id: String, due: Int64, until: Int64) throws -> Bool
    /// The token was revoked (or Apple no longer knows it): forgets it.
    func deleteAppleToken(id: String) throws
    /// An attempt failed: the next one is due at `at`.
    func postponeAppleRevocation(id: String, to at: Int64, error: String) throws
}

extension LedgerReading {
    /// The identity primitives of this snapshot.
    package func identityReading() throws -> any IdentityReading {
        guard let r = self as? any IdentityReading else { throw IdentityStorageError.unsupported }
        return r
    }
}

extension LedgerWriting {
    /// The identity primitives of this write.
    package func identityWriting() throws -> any IdentityWriting {
        guard let w = self as? any IdentityWriting else { throw IdentityStorageError.unsupported }
        return w
    }
}
