#if Postgres
import LedgerCore
import LedgerModel
import PostgresKit

/// `AccountAccessWriting` over PostgreSQL (schema version 5). Link codes, recovery codes
/// and attempt counters are rows every server process sees: a code issued by one process
/// redeems at another, and a limit counts every process's attempts. Concurrent writers of
/// one row (a code taken twice, one counter) wait for each other's row lock.
extension PostgresLedgerTransaction {
    // MARK: reads

    func recoveryCodeSummary(account: String) throws -> RecoveryCodeSummary {
        let r = try db.queryOne("""
            SELECT count(*), count(*) FILTER (WHERE used_at IS NULL), max(created_at) FROM recovery_codes WHERE account_id = $1
            """, [.uuid(account)])
        guard let r, r.int(0) > 0 else { return RecoveryCodeSummary(remaining: 0, createdAt: nil) }
        return RecoveryCodeSummary(remaining: Int(r.int(1)), createdAt: r.optionalTimestampMs(2))
    }

    func recoveryCandidate(handle: String, hash: [UInt8]) throws -> RecoveryCandidate {
        guard let r = try db.queryOne("""
            SELECT a.id, r.hash, r.used_at IS NOT NULL FROM accounts a
            LEFT JOIN recovery_codes r ON r.account_id = a.id AND r.hash = $2
            WHERE a.handle = $1
            """, [.text(handle), .bytes(hash)]) else { return RecoveryCandidate(accountId: nil, storedHash: nil, used: false) }
        return RecoveryCandidate(accountId: r.uuid(0), storedHash: r.isNull(1) ? nil : r.bytea(1), used: r.optionalBool(2) ?? false)
    }

    func isHandleRetired(_ handle: String, now: Int64) throws -> Bool {
        try db.queryOne("SELECT 1 FROM retired_handles WHERE handle = $1 AND reserved_until > $2", [.text(handle), .timestamp(ms: now)]) != nil
    }

    func ownedHouseholds(account: String) throws -> [OwnedHousehold] {
        sendDeferred()
        return try db.query("""
            /* global: households of an account */
            SELECT h.id, EXISTS (SELECT 1 FROM participants p WHERE p.household_id = h.id AND p.status = 'accepted')
            FROM households h WHERE h.owner_account_id = $1 ORDER BY h.id
            """, [.uuid(account)]).rows.map { OwnedHousehold(id: $0.uuid(0), hasOtherMembers: $0.bool(1)) }
    }

    func activeParticipations(account: String) throws -> [(household: String, status: Participant.Status)] {
        try db.query("""
            /* global: households of an account */
            SELECT household_id, status FROM participants WHERE account_id = $1 AND status IN ('invited', 'accepted')
            ORDER BY household_id
            """, [.uuid(account)]).rows.map { ($0.uuid(0), Participant.Status(rawValue: $0.string(1)) ?? .invited) }
    }

    // MARK: link codes

    func insertLinkCode(_ r: LinkCodeRecord, hash: [UInt8]) throws {
        try db.query("DELETE FROM link_codes WHERE expires_at <= $1", [.timestamp(ms: r.createdAt)])
        try db.query("""
            DELETE FROM link_codes WHERE account_id = $1 AND hash NOT IN (
                SELECT hash FROM link_codes WHERE account_id = $1 ORDER BY created_at DESC, hash DESC LIMIT $2)
            """, [.uuid(r.accountId), .int(Int64(LinkCodeRecord.perAccount - 1))])
        try db.query("INSERT INTO link_codes (hash, bucket, account_id, created_at, expires_at) VALUES ($1, $2, $3, $4, $5)",
                     [.bytes(hash), .text(r.bucket), .uuid(r.accountId), .timestamp(ms: r.createdAt), .timestamp(ms: r.expiresAt)])
    }

    func takeLinkCode(hash: [UInt8], now: Int64, maxFailures: Int) throws -> (accountId: String, storedHash: [UInt8])? {
        try db.queryOne("""
            DELETE FROM link_codes WHERE hash = $1 AND expires_at > $2 AND ($3 = 0 OR failures < $3) RETURNING account_id, hash
            """, [.bytes(hash), .timestamp(ms: now), .int(Int64(maxFailures))]).map { ($0.uuid(0), $0.bytea(1)) }
    }

    func countLinkCodeFailure(bucket: String, now: Int64) throws {
        try db.query("UPDATE link_codes SET failures = failures + 1 WHERE bucket = $1 AND expires_at > $2",
                     [.text(bucket), .timestamp(ms: now)])
    }

    func deleteLinkCodes(account: String) throws {
        try db.query("DELETE FROM link_codes WHERE account_id = $1", [.uuid(account)])
    }

    // MARK: recovery codes

    func replaceRecoveryCodes(account: String, hashes: [[UInt8]], at: Int64) throws {
        try db.query("DELETE FROM recovery_codes WHERE account_id = $1", [.uuid(account)])
        for hash in hashes {
            try db.query("INSERT INTO recovery_codes (account_id, hash, created_at) VALUES ($1, $2, $3)",
                         [.uuid(account), .bytes(hash), .timestamp(ms: at)])
        }
    }

    func useRecoveryCode(account: String, hash: [UInt8], at: Int64) throws -> Bool {
        try db.query("UPDATE recovery_codes SET used_at = $3 WHERE account_id = $1 AND hash = $2 AND used_at IS NULL",
                     [.uuid(account), .bytes(hash), .timestamp(ms: at)]).affectedRows == 1
    }

    func deleteRecoveryCodes(account: String) throws {
        try db.query("DELETE FROM recovery_codes WHERE account_id = $1", [.uuid(account)])
    }

    // MARK: attempt counters

    func takeAttempt(_ limit: AttemptLimit, key: String, now: Int64) throws -> Int64? {
        // Finished windows of the scope go first (this key's too: it then starts afresh).
        try db.query("DELETE FROM attempt_counters WHERE scope = $1 AND window_start <= $2",
                     [.text(limit.scope), .timestamp(ms: now - limit.windowMs)])
        guard let r = try db.queryOne("""
            INSERT INTO attempt_counters (scope, subject, window_start, attempts) VALUES ($1, $2, $3, 1)
            ON CONFLICT (scope, subject) DO UPDATE SET attempts = attempt_counters.attempts + 1
            RETURNING window_start, attempts
            """, [.text(limit.scope), .text(key), .timestamp(ms: now)]) else { return nil }
        return limit.retryAfter(windowStart: r.timestampMs(0), count: r.int(1), now: now)
    }

    func returnAttempt(scope: String, key: String) throws {
        try db.query("UPDATE attempt_counters SET attempts = attempts - 1 WHERE scope = $1 AND subject = $2 AND attempts > 0",
                     [.text(scope), .text(key)])
    }

    func clearAttempts(scope: String, key: String) throws {
        try db.query("DELETE FROM attempt_counters WHERE scope = $1 AND subject = $2", [.text(scope), .text(key)])
    }

    // MARK: owners and deleted accounts

    func setOwner(household: String, account: String) throws {
        sendDeferred()
        try lock(household)
        try db.query("UPDATE households SET owner_account_id = $2 WHERE id = $1", [.uuid(household), .uuid(account)])
        forgetAccessReads()
    }

    func deleteParticipant(household: String, account: String) throws {
        try lock(household)
        try db.query("DELETE FROM participants WHERE household_id = $1 AND account_id = $2", [.uuid(household), .uuid(account)])
        forgetAccessReads()
    }

    /// Drops the access records this transaction kept (an owner or a participant changed):
    /// setting the savepoint state to itself keeps the locks and unsent rows as they are.
    private func forgetAccessReads() {
        savepointState = savepointState
    }

    func deleteBlocks(involving account: String) throws {
        try db.query("DELETE FROM blocks WHERE account_id = $1 OR blocked_account_id = $1", [.uuid(account)])
    }

    func markAccountDeleted(id: String, at: Int64) throws {
        try db.query("UPDATE accounts SET handle = $2, display_name = $3 WHERE id = $1",
                     [.uuid(id), .text(AccountRecord.deletedHandle(id: id)), .text(AccountRecord.deletedDisplayName)])
        try db.query("INSERT INTO deleted_accounts (account_id, deleted_at) VALUES ($1, $2)", [.uuid(id), .timestamp(ms: at)])
    }

    func retireHandle(_ handle: String, account: String, until: Int64) throws {
        try db.query("""
            INSERT INTO retired_handles (handle, account_id, reserved_until) VALUES ($1, $2, $3)
            ON CONFLICT (handle) DO UPDATE SET account_id = excluded.account_id, reserved_until = excluded.reserved_until
            """, [.text(handle), .uuid(account), .timestamp(ms: until)])
    }
}
#endif
