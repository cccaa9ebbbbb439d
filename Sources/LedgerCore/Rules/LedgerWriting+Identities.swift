import Foundation
import LedgerModel

/// A verified identity on its way into a sign-in or a link: who the token names, and the
/// nonce to remember with the write that accepts it.
package struct VerifiedIdentity: Sendable {
    package let provider: String
    package let issuer: String
    package let subject: String
    package let nonce: NonceRecord?

    package init(provider: String, issuer: String, subject: String, nonce: NonceRecord?) {
        self.provider = provider
        self.issuer = issuer
        self.subject = subject
        self.nonce = nonce
    }
}

/// How `signIn` ended.
package struct SignInOutcome: Sendable {
    package let account: AccountRecord
    package let token: IssuedToken
    package let identity: IdentityRecord
    /// Whether the account was made by this sign-in.
    package let created: Bool

    package init(account: AccountRecord, token: IssuedToken, identity: IdentityRecord, created: Bool) {
        self.account = account
        self.token = token
        self.identity = identity
        self.created = created
    }
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
    package func signIn(_ v: VerifiedIdentity, register: (handle: String, displayName: String)?, deviceName: String,
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
    package func linkIdentity(_ v: VerifiedIdentity, account: String, now: Int64) throws -> (IdentityRecord, created: Bool) {
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
    package func unlinkIdentity(id: String, account: String, now: Int64) throws {
        let w = try identityWriting()
        guard try w.deleteIdentity(id: id, account: account) != nil else { throw IdentityStorageError.identityNotFound }
        _ = try w.queueAppleRevocations(identity: id, at: now)
    }

    /// Unlinks every identity of the account and queues the Apple tokens that came with
    /// them for revocation; for deleting an account, in the deletion's own write. Answers
    /// how many identities there were.
    @discardableResult
    package func unlinkAllIdentities(accountId: String, now: Int64 = Timestamp.nowMs()) throws -> Int {
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
    package func revokeAppleTokens(accountId: String, now: Int64 = Timestamp.nowMs()) throws -> Int {
        try identityWriting().queueAppleRevocations(account: accountId, at: now)
    }
}
