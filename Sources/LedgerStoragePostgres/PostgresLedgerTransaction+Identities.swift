#if Postgres
import LedgerCore
import LedgerModel
import PostgresKit

/// The identity primitives over the schema's migration 5, shared by every process.
///
/// Two first links of one identity race on its unique key (issuer, subject), and two
/// sign-ins with one nonce on the nonce's key: a linking loser runs again
/// (`PostgresLedgerStorage`) and finds the winner's row; a nonce insert waits for the
/// other transaction and then does nothing, so its request is refused as a replay. A
/// revocation is claimed by an update conditioned on the due time it was read with, so
/// of two processes one sends it.
extension PostgresLedgerTransaction: IdentityWriting {
    /// A path id that is not a UUID names no row (and must not reach a uuid parameter).
    private static func isUUID(_ id: String) -> Bool { LedgerIDs.parse(id) != nil }

    // MARK: reading

    func identity(issuer: String, subject: String) throws -> IdentityRecord? {
        try db.queryOne("SELECT \(IdentityRecord.columns) FROM identities WHERE issuer = $1 AND subject = $2",
                        [.text(issuer), .text(subject)]).map { IdentityRecord(row: $0) }
    }

    func identities(account: String) throws -> [IdentityRecord] {
        try db.query("SELECT \(IdentityRecord.columns) FROM identities WHERE account_id = $1 ORDER BY linked_at, id",
                     [.uuid(account)]).rows.map { IdentityRecord(row: $0) }
    }

    func nonceRecorded(hash: String, now: Int64) throws -> Bool {
        try db.queryOne("SELECT 1 FROM identity_nonces WHERE nonce_hash = $1 AND expires_at >= $2",
                        [.text(hash), .timestamp(ms: now)]) != nil
    }

    func appleRevocationsDue(now: Int64, keyId: String, limit: Int) throws -> [AppleTokenRecord] {
        try db.query("""
            SELECT \(AppleTokenRecord.columns) FROM apple_tokens
            WHERE revoke_after IS NOT NULL AND revoke_after <= $1 AND key_id = $2 ORDER BY revoke_after, id LIMIT $3
            """, [.timestamp(ms: now), .text(keyId), .int(Int64(limit))]).rows.map { AppleTokenRecord(row: $0) }
    }

    func appleTokens(account: String) throws -> [AppleTokenRecord] {
        try db.query("SELECT \(AppleTokenRecord.columns) FROM apple_tokens WHERE account_id = $1 ORDER BY created_at, id",
                     [.uuid(account)]).rows.map { AppleTokenRecord(row: $0) }
    }

    // MARK: writing

    func insertIdentity(_ i: IdentityRecord) throws {
        try db.query("INSERT INTO identities (\(IdentityRecord.columns)) VALUES ($1, $2, $3, $4, $5, $6)",
                     [.uuid(i.id), .uuid(i.accountId), .text(i.provider), .text(i.issuer), .text(i.subject),
                      .timestamp(ms: i.linkedAt)])
    }

    func deleteIdentity(id: String, account: String) throws -> IdentityRecord? {
        guard Self.isUUID(id) else { return nil }
        return try db.queryOne("DELETE FROM identities WHERE id = $1 AND account_id = $2 RETURNING \(IdentityRecord.columns)",
                               [.uuid(id), .uuid(account)]).map { IdentityRecord(row: $0) }
    }

    func deleteIdentities(account: String) throws -> Int {
        Int(try db.query("DELETE FROM identities WHERE account_id = $1", [.uuid(account)]).affectedRows)
    }

    func recordNonce(_ n: NonceRecord, now: Int64) throws -> Bool {
        // A few expired nonces go first; rows another transaction is deleting are skipped.
        try db.query("""
            DELETE FROM identity_nonces WHERE nonce_hash IN
                (SELECT nonce_hash FROM identity_nonces WHERE expires_at < $1 ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED)
            """, [.timestamp(ms: now), .int(Int64(NonceRecord.expiredPerInsert))])
        let inserted = try db.query("""
            INSERT INTO identity_nonces (nonce_hash, expires_at) VALUES ($1, $2)
            ON CONFLICT (nonce_hash) DO UPDATE SET expires_at = excluded.expires_at WHERE identity_nonces.expires_at < $3
            """, [.text(n.hash), .timestamp(ms: n.expiresAt), .timestamp(ms: now)]).affectedRows
        return inserted == 1
    }

    func storeAppleToken(_ t: AppleTokenRecord) throws {
        try db.query("DELETE FROM apple_tokens WHERE account_id = $1 AND client_id = $2 AND revoke_after IS NULL",
                     [.uuid(t.accountId), .text(t.clientId)])
        try db.query("INSERT INTO apple_tokens (\(AppleTokenRecord.columns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
                     [.uuid(t.id), .uuid(t.accountId), t.identityId.map { .uuid($0) } ?? .null, .text(t.clientId),
                      .bytes(t.sealed), .text(t.keyId), .timestamp(ms: t.createdAt), .optionalTimestamp(ms: t.revokeAfter),
                      .int(Int64(t.attempts))])
    }

    func queueAppleRevocations(account: String, at: Int64) throws -> Int {
        Int(try db.query("UPDATE apple_tokens SET revoke_after = $1 WHERE account_id = $2 AND revoke_after IS NULL",
                         [.timestamp(ms: at), .uuid(account)]).affectedRows)
    }

    func queueAppleRevocations(identity: String, at: Int64) throws -> Int {
        guard Self.isUUID(identity) else { return 0 }
        return Int(try db.query("""
            UPDATE apple_tokens SET revoke_after = $1, identity_id = NULL WHERE identity_id = $2 AND revoke_after IS NULL
            """, [.timestamp(ms: at), .uuid(identity)]).affectedRows)
    }

    func claimAppleRevocation(id: String, due: Int64, until: Int64) throws -> Bool {
        try db.query("UPDATE apple_tokens SET revoke_after = $1 WHERE id = $2 AND revoke_after = $3",
                     [.timestamp(ms: until), .uuid(id), .timestamp(ms: due)]).affectedRows == 1
    }

    func deleteAppleToken(id: String) throws {
        try db.query("DELETE FROM apple_tokens WHERE id = $1", [.uuid(id)])
    }

    func postponeAppleRevocation(id: String, to at: Int64, error: String) throws {
        try db.query("UPDATE apple_tokens SET revoke_after = $1, attempts = attempts + 1, last_error = $2 WHERE id = $3",
                     [.timestamp(ms: at), .text(error), .uuid(id)])
    }
}
#endif
