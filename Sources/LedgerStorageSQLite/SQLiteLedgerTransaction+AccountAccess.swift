import LedgerCore
import LedgerModel
import SQLiteKit

/// `AccountAccessWriting` over SQLite (schema version 12). Every statement goes through
/// `db`, which first writes the rows the writer holds back and forgets its access records.
extension SQLiteLedgerTransaction {
    // MARK: reads

    func recoveryCodeSummary(account: String) throws -> RecoveryCodeSummary {
        let r = try db.queryOne("SELECT COUNT(*), SUM(used_at IS NULL), MAX(created_at) FROM recovery_codes WHERE account_id = ?",
                                [.text(account)])
        guard let r, r.int(0) > 0 else { return RecoveryCodeSummary(remaining: 0, createdAt: nil) }
        return RecoveryCodeSummary(remaining: Int(r.int(1)), createdAt: r.optionalInt(2))
    }

    func recoveryCandidate(handle: String, hash: [UInt8]) throws -> RecoveryCandidate {
        guard let r = try db.queryOne("""
            SELECT a.id, r.hash, r.used_at IS NOT NULL FROM accounts a
            LEFT JOIN recovery_codes r ON r.account_id = a.id AND r.hash = ?2
            WHERE a.handle = ?1
            """, [.text(handle), .blob(hash)]) else { return RecoveryCandidate(accountId: nil, storedHash: nil, used: false) }
        return RecoveryCandidate(accountId: r.string(0), storedHash: r.isNull(1) ? nil : r.blob(1), used: !r.isNull(1) && r.bool(2))
    }

    func isHandleRetired(_ handle: String, now: Int64) throws -> Bool {
        try db.queryOne("SELECT 1 FROM retired_handles WHERE handle = ? AND reserved_until > ?", [.text(handle), .integer(now)]) != nil
    }

    func ownedHouseholds(account: String) throws -> [OwnedHousehold] {
        try db.query("""
            SELECT h.id, EXISTS (SELECT 1 FROM participants p WHERE p.household_id = h.id AND p.status = 'accepted')
            FROM households h WHERE h.owner_account_id = ? ORDER BY h.id
            """, [.text(account)]).map { OwnedHousehold(id: $0.string(0), hasOtherMembers: $0.bool(1)) }
    }

    func activeParticipations(account: String) throws -> [(household: String, status: Participant.Status)] {
        try db.query("""
            SELECT household_id, status FROM participants WHERE account_id = ? AND status IN ('invited', 'accepted')
            ORDER BY household_id
            """, [.text(account)]).map { ($0.string(0), Participant.Status(rawValue: $0.string(1)) ?? .invited) }
    }

    // MARK: link codes

    func insertLinkCode(_ r: LinkCodeRecord, hash: [UInt8]) throws {
        let db = try self.db
        try db.run("DELETE FROM link_codes WHERE expires_at <= ?", [.integer(r.createdAt)])
        try db.run("""
            DELETE FROM link_codes WHERE account_id = ?1 AND hash NOT IN (
                SELECT hash FROM link_codes WHERE account_id = ?1 ORDER BY created_at DESC, hash DESC LIMIT ?2)
            """, [.text(r.accountId), .int(LinkCodeRecord.perAccount - 1)])
        try db.run("INSERT INTO link_codes (hash, bucket, account_id, created_at, expires_at) VALUES (?, ?, ?, ?, ?)",
                   [.blob(hash), .text(r.bucket), .text(r.accountId), .integer(r.createdAt), .integer(r.expiresAt)])
    }

    func takeLinkCode(hash: [UInt8], now: Int64, maxFailures: Int) throws -> (accountId: String, storedHash: [UInt8])? {
        try db.queryOne("""
            DELETE FROM link_codes WHERE hash = ?1 AND expires_at > ?2 AND (?3 = 0 OR failures < ?3) RETURNING account_id, hash
            """, [.blob(hash), .integer(now), .int(maxFailures)]).map { ($0.string(0), $0.blob(1)) }
    }

    func countLinkCodeFailure(bucket: String, now: Int64) throws {
        try db.run("UPDATE link_codes SET failures = failures + 1 WHERE bucket = ? AND expires_at > ?", [.text(bucket), .integer(now)])
    }

    func deleteLinkCodes(account: String) throws {
        try db.run("DELETE FROM link_codes WHERE account_id = ?", [.text(account)])
    }

    // MARK: recovery codes

    func replaceRecoveryCodes(account: String, hashes: [[UInt8]], at: Int64) throws {
        let db = try self.db
        try db.run("DELETE FROM recovery_codes WHERE account_id = ?", [.text(account)])
        for hash in hashes {
            try db.run("INSERT INTO recovery_codes (account_id, hash, created_at) VALUES (?, ?, ?)",
                       [.text(account), .blob(hash), .integer(at)])
        }
    }

    func useRecoveryCode(account: String, hash: [UInt8], at: Int64) throws -> Bool {
        try db.run("UPDATE recovery_codes SET used_at = ? WHERE account_id = ? AND hash = ? AND used_at IS NULL",
                   [.integer(at), .text(account), .blob(hash)])
        return connection.changes == 1
    }

    func deleteRecoveryCodes(account: String) throws {
        try db.run("DELETE FROM recovery_codes WHERE account_id = ?", [.text(account)])
    }

    // MARK: attempt counters

    func takeAttempt(_ limit: AttemptLimit, key: String, now: Int64) throws -> Int64? {
        let db = try self.db
        let windowEnded = now - limit.windowMs
        // Finished windows of the scope go first (this key's too: it then starts afresh).
        try db.run("DELETE FROM attempt_counters WHERE window_start <= ?2 AND scope = ?1", [.text(limit.scope), .integer(windowEnded)])
        guard let r = try db.queryOne("""
            INSERT INTO attempt_counters (scope, subject, window_start, attempts) VALUES (?1, ?2, ?3, 1)
            ON CONFLICT (scope, subject) DO UPDATE SET attempts = attempt_counters.attempts + 1
            RETURNING window_start, attempts
            """, [.text(limit.scope), .text(key), .integer(now)]) else { return nil }
        return limit.retryAfter(windowStart: r.int(0), count: r.int(1), now: now)
    }

    func returnAttempt(scope: String, key: String) throws {
        try db.run("UPDATE attempt_counters SET attempts = attempts - 1 WHERE scope = ? AND subject = ? AND attempts > 0", [.text(scope), .text(key)])
    }

    func clearAttempts(scope: String, key: String) throws {
        try db.run("DELETE FROM attempt_counters WHERE scope = ? AND subject = ?", [.text(scope), .text(key)])
    }

    // MARK: owners and deleted accounts

    func setOwner(household: String, account: String) throws {
        try db.run("UPDATE households SET owner_account_id = ? WHERE id = ?", [.text(account), .text(household)])
    }

    func deleteParticipant(household: String, account: String) throws {
        try db.run("DELETE FROM participants WHERE household_id = ? AND account_id = ?", [.text(household), .text(account)])
    }

    func deleteBlocks(involving account: String) throws {
        try db.run("DELETE FROM blocks WHERE account_id = ?1 OR blocked_account_id = ?1", [.text(account)])
    }

    func markAccountDeleted(id: String, at: Int64) throws {
        let db = try self.db
        try db.run("UPDATE accounts SET handle = ?, display_name = ? WHERE id = ?",
                   [.text(AccountRecord.deletedHandle(id: id)), .text(AccountRecord.deletedDisplayName), .text(id)])
        try db.run("INSERT INTO deleted_accounts (account_id, deleted_at) VALUES (?, ?)", [.text(id), .integer(at)])
    }

    func retireHandle(_ handle: String, account: String, until: Int64) throws {
        try db.run("""
            INSERT INTO retired_handles (handle, account_id, reserved_until) VALUES (?, ?, ?)
            ON CONFLICT (handle) DO UPDATE SET account_id = excluded.account_id, reserved_until = excluded.reserved_until
            """, [.text(handle), .text(account), .integer(until)])
    }
}
