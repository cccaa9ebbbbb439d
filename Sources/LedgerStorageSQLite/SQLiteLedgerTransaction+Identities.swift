import LedgerCore
import LedgerModel
import SQLiteKit

/// The identity primitives over schema version 12 (`identities`, `identity_nonces`,
/// `apple_tokens`). One writer: what a write reads is current without locking.
extension SQLiteLedgerTransaction: IdentityWriting {
    // MARK: reading

    func identity(issuer: String, subject: String) throws -> IdentityRecord? {
        try db.queryOne("SELECT \(IdentityRecord.columns) FROM identities WHERE issuer = ? AND subject = ?",
                        [.text(issuer), .text(subject)]).map { IdentityRecord(row: $0) }
    }

    func identities(account: String) throws -> [IdentityRecord] {
        try db.query("SELECT \(IdentityRecord.columns) FROM identities WHERE account_id = ? ORDER BY linked_at, id",
                     [.text(account)]).map { IdentityRecord(row: $0) }
    }

    func nonceRecorded(hash: String, now: Int64) throws -> Bool {
        try db.queryOne("SELECT 1 FROM identity_nonces WHERE nonce_hash = ? AND expires_at >= ?",
                        [.text(hash), .integer(now)]) != nil
    }

    func appleRevocationsDue(now: Int64, keyId: String, limit: Int) throws -> [AppleTokenRecord] {
        try db.query("""
            SELECT \(AppleTokenRecord.columns) FROM apple_tokens
            WHERE revoke_after IS NOT NULL AND revoke_after <= ? AND key_id = ? ORDER BY revoke_after, id LIMIT ?
            """, [.integer(now), .text(keyId), .int(limit)]).map { AppleTokenRecord(row: $0) }
    }

    func appleTokens(account: String) throws -> [AppleTokenRecord] {
        try db.query("SELECT \(AppleTokenRecord.columns) FROM apple_tokens WHERE account_id = ? ORDER BY created_at, id",
                     [.text(account)]).map { AppleTokenRecord(row: $0) }
    }

    // MARK: writing

    func insertIdentity(_ i: IdentityRecord) throws {
        try db.run("INSERT INTO identities (\(IdentityRecord.columns)) VALUES (?, ?, ?, ?, ?, ?)",
                   [.text(i.id), .text(i.accountId), .text(i.provider), .text(i.issuer), .text(i.subject), .integer(i.linkedAt)])
    }

    func deleteIdentity(id: String, account: String) throws -> IdentityRecord? {
        guard let found = try db.queryOne("SELECT \(IdentityRecord.columns) FROM identities WHERE id = ? AND account_id = ?",
                                          [.text(id), .text(account)]).map({ IdentityRecord(row: $0) }) else { return nil }
        try db.run("DELETE FROM identities WHERE id = ?", [.text(id)])
        return found
    }

    func deleteIdentities(account: String) throws -> Int {
        try db.run("DELETE FROM identities WHERE account_id = ?", [.text(account)])
        return connection.changes
    }

    func recordNonce(_ n: NonceRecord, now: Int64) throws -> Bool {
        try db.run("""
            DELETE FROM identity_nonces WHERE nonce_hash IN
                (SELECT nonce_hash FROM identity_nonces WHERE expires_at < ? ORDER BY expires_at LIMIT ?)
            """, [.integer(now), .int(NonceRecord.expiredPerInsert)])
        // An expired row of the same hash (not forgotten yet) is taken over.
        try db.run("""
            INSERT INTO identity_nonces (nonce_hash, expires_at) VALUES (?, ?)
            ON CONFLICT (nonce_hash) DO UPDATE SET expires_at = excluded.expires_at WHERE identity_nonces.expires_at < ?
            """, [.text(n.hash), .integer(n.expiresAt), .integer(now)])
        return connection.changes == 1
    }

    func storeAppleToken(_ t: AppleTokenRecord) throws {
        try db.run("DELETE FROM apple_tokens WHERE account_id = ? AND client_id = ? AND revoke_after IS NULL",
                   [.text(t.accountId), .text(t.clientId)])
        try db.run("""
            INSERT INTO apple_tokens (\(AppleTokenRecord.columns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(t.id), .text(t.accountId), .optionalText(t.identityId), .text(t.clientId), .blob(t.sealed),
                  .text(t.keyId), .integer(t.createdAt), .optionalInteger(t.revokeAfter), .int(t.attempts)])
    }

    func queueAppleRevocations(account: String, at: Int64) throws -> Int {
        try db.run("UPDATE apple_tokens SET revoke_after = ? WHERE account_id = ? AND revoke_after IS NULL",
                   [.integer(at), .text(account)])
        return connection.changes
    }

    func queueAppleRevocations(identity: String, at: Int64) throws -> Int {
        try db.run("UPDATE apple_tokens SET revoke_after = ?, identity_id = NULL WHERE identity_id = ? AND revoke_after IS NULL",
                   [.integer(at), .text(identity)])
        return connection.changes
    }

    func claimAppleRevocation(id: String, due: Int64, until: Int64) throws -> Bool {
        try db.run("UPDATE apple_tokens SET revoke_after = ? WHERE id = ? AND revoke_after = ?",
                   [.integer(until), .text(id), .integer(due)])
        return connection.changes == 1
    }

    func deleteAppleToken(id: String) throws {
        try db.run("DELETE FROM apple_tokens WHERE id = ?", [.text(id)])
    }

    func postponeAppleRevocation(id: String, to at: Int64, error: String) throws {
        try db.run("UPDATE apple_tokens SET revoke_after = ?, attempts = attempts + 1, last_error = ? WHERE id = ?",
                   [.integer(at), .text(error), .text(id)])
    }
}
