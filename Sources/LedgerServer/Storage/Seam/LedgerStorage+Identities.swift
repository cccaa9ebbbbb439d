import Foundation
import LedgerModel

/// Identity primitives every storage conformer's reads offer besides `LedgerReading`
/// (a protocol of its own, so the ledger's seam stays as it is).
protocol IdentityReading {
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
protocol IdentityWriting: IdentityReading {
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
    func identityReading() throws -> any IdentityReading {
        guard let r = self as? any IdentityReading else { throw IdentityStorageError.unsupported }
        return r
    }
}

extension LedgerWriting {
    /// The identity primitives of this write.
    func identityWriting() throws -> any IdentityWriting {
        guard let w = self as? any IdentityWriting else { throw IdentityStorageError.unsupported }
        return w
    }
}

/// A verified identity on its way into a sign-in or a link: who the token names, and the
/// nonce to remember with the write that accepts it.
struct VerifiedIdentity: Sendable {
    let provider: String
    let issuer: String
    let subject: String
    let nonce: NonceRecord?
}

/// How `signIn` ended.
struct SignInOutcome: Sendable {
    let account: AccountRecord
    let token: IssuedToken
    let identity: IdentityRecord
    /// Whether the account was made by this sign-in.
    let created: Bool
}

/// The identity rules, written once over the primitives (both backends).
///
/// A nonce is remembered by the write that accepts its token (a sign-in, an account made,
/// an identity linked), in the same transaction: a token refused for any other reason
/// (not linked yet, a handle taken, registration closed) can be sent again with its nonce,
/// as an app does after asking the user for a handle. Two requests with one nonce race on
/// the nonce's key; the loser is refused as a replay.
extension LedgerWriting {
    /// `POST /v1/auth/{provider}`: a new device token for the account the identity is linked
    /// to; when it is linked to none and `register` is given (the handle and names), a new
    /// account linked to it. `identityNotLinked` otherwise.
    func signIn(_ v: VerifiedIdentity, register: (handle: String, displayName: String)?, deviceName: String,
                maxTokens: Int, now: Int64) throws -> SignInOutcome {
        let w = try identityWriting()
        if let nonce = v.nonce, !(try w.recordNonce(nonce, now: now)) { throw IdentityStorageError.nonceReplayed }
        if let linked = try w.identity(issuer: v.issuer, subject: v.subject) {
            guard let account = try account(id: linked.accountId) else { throw IdentityStorageError.identityNotLinked }
            let token = try createToken(account: account.id, deviceName: deviceName, maxTokens: maxTokens, now: now)
            return SignInOutcome(account: account, token: token, identity: linked, created: false)
        }
        guard let register else { throw IdentityStorageError.identityNotLinked }
        let (account, token) = try createAccount(handle: register.handle, displayName: register.displayName,
                                                 deviceName: deviceName, now: now)
        let identity = IdentityRecord(id: UUID().lowercased, accountId: account.id, provider: v.provider, issuer: v.issuer,
                                      subject: v.subject, linkedAt: now)
        try w.insertIdentity(identity)
        return SignInOutcome(account: account, token: token, identity: identity, created: true)
    }

    /// `POST /v1/me/identities`: links the identity to `account`. Answers the identity and
    /// whether it is new (false: it was linked to this account already).
    func linkIdentity(_ v: VerifiedIdentity, account: String, now: Int64) throws -> (IdentityRecord, created: Bool) {
        let w = try identityWriting()
        if let nonce = v.nonce, !(try w.recordNonce(nonce, now: now)) { throw IdentityStorageError.nonceReplayed }
        if let existing = try w.identity(issuer: v.issuer, subject: v.subject) {
            guard existing.accountId == account else { throw IdentityStorageError.identityInUse }
            return (existing, false)
        }
        let identity = IdentityRecord(id: UUID().lowercased, accountId: account, provider: v.provider, issuer: v.issuer,
                                      subject: v.subject, linkedAt: now)
        try w.insertIdentity(identity)
        return (identity, true)
    }

    /// `DELETE /v1/me/identities/{id}`: unlinks one of the account's identities (another
    /// account's is `identityNotFound`) and queues the Apple tokens that came with it for
    /// revocation.
    func unlinkIdentity(id: String, account: String, now: Int64) throws {
        let w = try identityWriting()
        guard try w.deleteIdentity(id: id, account: account) != nil else { throw IdentityStorageError.identityNotFound }
        _ = try w.queueAppleRevocations(identity: id, at: now)
    }

    /// Unlinks every identity of the account and queues the Apple tokens that came with
    /// them for revocation; for deleting an account, in the deletion's own write. Answers
    /// how many identities there were.
    @discardableResult
    func unlinkAllIdentities(accountId: String, now: Int64 = Timestamp.nowMs()) throws -> Int {
        let w = try identityWriting()
        for identity in try w.identities(account: accountId) {
            _ = try w.queueAppleRevocations(identity: identity.id, at: now)
        }
        return try w.deleteIdentities(account: accountId)
    }

    /// Queues every Apple refresh token the server keeps for the account for
    /// `/auth/revoke` (sent by the revocation outbox, retried later while Apple cannot be
    /// reached); for deleting an account, in the deletion's own write. The rows outlive the
    /// account until Apple has answered. Answers how many were queued.
    @discardableResult
    func revokeAppleTokens(accountId: String, now: Int64 = Timestamp.nowMs()) throws -> Int {
        try identityWriting().queueAppleRevocations(account: accountId, at: now)
    }
}

extension LedgerStorage {
    /// A write whose caller waits for it on its own thread (a worker that verified a token,
    /// the revocation outbox). Over PostgreSQL it runs right there: a worker waiting for a
    /// write queued to the workers could wait for itself. Over SQLite it is a job of the
    /// writer's group commit, like any write.
    func writeHere<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T) throws -> T {
        #if Postgres
        if let postgres = self as? PostgresLedgerStorage { return try postgres.writeNow(body) }
        #endif
        return try writeAndWait(body)
    }
}
