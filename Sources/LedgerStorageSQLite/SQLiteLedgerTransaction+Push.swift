import LedgerCore
import LedgerModel
import SQLiteKit

/// The push primitives over schema versions 14 and 19 (`push_registrations`, `push_wakes`). One
/// writer: a claim is an update of the due time, and nobody else takes the same row.
extension SQLiteLedgerTransaction: PushWriting {
    private static let registrationColumns = "token_id, account_id, household_id, child_id, app_id, push_key, gateway, registered_at"
    /// `registrationColumns` of `push_registrations r`.
    private static let registrationSelect = "r.token_id, r.account_id, r.household_id, r.child_id, r.app_id, r.push_key, r.gateway, r.registered_at"

    private static func registration(_ r: SQLiteRow, from i: Int = 0) -> PushRegistration {
        let child = r.optionalString(i + 2).flatMap { h in r.optionalString(i + 3).map { ChildScope(householdId: h, childId: $0) } }
        return PushRegistration(tokenId: r.string(i), accountId: r.optionalString(i + 1) ?? Caller.noAccount, child: child,
                                appId: r.string(i + 4), pushKey: r.string(i + 5), gateway: r.string(i + 6), registeredAt: r.int(i + 7))
    }

    /// The members of household `?1` (its owner and accepted participants).
    static let membersSQL = """
        SELECT owner_account_id FROM households WHERE id = ?1
        UNION ALL SELECT account_id FROM participants WHERE household_id = ?1 AND status = 'accepted'
        """

    func pushRegistrations(tokens: [String]) throws -> [String: PushRegistration] {
        guard !tokens.isEmpty else { return [:] }
        let list = "[" + tokens.map { "\"\($0)\"" }.joined(separator: ",") + "]"
        let rows = try db.query("""
            SELECT \(Self.registrationColumns) FROM push_registrations WHERE token_id IN (SELECT value FROM json_each(?))
            """, [.text(list)])
        var out: [String: PushRegistration] = [:]
        for r in rows { let reg = Self.registration(r); out[reg.tokenId] = reg }
        return out
    }

    func pushOutboxDepth() throws -> Int {
        Int(try db.queryOne("SELECT count(*) FROM push_wakes WHERE due_at IS NOT NULL")?.int(0) ?? 0)
    }

    func upsertPushRegistration(_ r: PushRegistration) throws {
        // A key moves with its device: another token of the account holding it (the app was
        // installed again) lets go. Another account's registration of the key is left alone.
        // A child's device: another token of the same child holding it lets go.
        if let child = r.child {
            try db.run("""
                DELETE FROM push_registrations
                WHERE household_id = ? AND child_id = ? AND app_id = ? AND push_key = ? AND token_id <> ?
                """, [.text(child.householdId), .text(child.childId), .text(r.appId), .text(r.pushKey), .text(r.tokenId)])
        } else {
            try db.run("DELETE FROM push_registrations WHERE account_id = ? AND app_id = ? AND push_key = ? AND token_id <> ?",
                       [.text(r.accountId), .text(r.appId), .text(r.pushKey), .text(r.tokenId)])
        }
        try db.run("""
            INSERT INTO push_registrations (\(Self.registrationColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (token_id) DO UPDATE SET app_id = excluded.app_id, push_key = excluded.push_key,
                gateway = excluded.gateway, registered_at = excluded.registered_at
            """, [.text(r.tokenId), r.child == nil ? .text(r.accountId) : .null, r.child.map { .text($0.householdId) } ?? .null,
                  r.child.map { .text($0.childId) } ?? .null, .text(r.appId), .text(r.pushKey), .text(r.gateway),
                  .integer(r.registeredAt)])
    }

    func deletePushRegistration(token: String, pushKey: String?) throws -> Bool {
        let db = try self.db
        try db.run("DELETE FROM push_registrations WHERE token_id = ? AND (? IS NULL OR push_key = ?)",
                   [.text(token), pushKey.map { .text($0) } ?? .null, pushKey.map { .text($0) } ?? .null])
        return db.changes > 0
    }

    func queuePushWakes(household: String, except author: String?, now: Int64) throws -> Int {
        let db = try self.db
        try db.run("""
            INSERT INTO push_wakes (token_id, household_id, seq, due_at, queued_at)
            SELECT token_id, household_id, seq, ?3, ?3 FROM (
                SELECT r.token_id, h.id AS household_id, h.seq
                FROM households h JOIN push_registrations r ON r.account_id IN (\(Self.membersSQL))
                WHERE h.id = ?1 AND r.token_id IS NOT ?2
                UNION ALL
                -- The household's children's devices: their feed may have moved.
                SELECT r.token_id, h.id, h.seq
                FROM households h JOIN push_registrations r ON r.household_id = h.id
                WHERE h.id = ?1 AND r.token_id IS NOT ?2)
            WHERE true
            ON CONFLICT (token_id, household_id) DO UPDATE SET seq = MAX(seq, excluded.seq),
                queued_at = CASE WHEN due_at IS NULL THEN excluded.queued_at ELSE queued_at END,
                due_at = COALESCE(due_at, MAX(excluded.due_at, quiet_until))
            """, [.text(household), author.map { .text($0) } ?? .null, .integer(now)])
        return db.changes
    }

    func claimPushWakes(now: Int64, lease: Int64, limit: Int) throws -> PushWakeClaim {
        let db = try self.db
        let taken = try db.query("""
            UPDATE push_wakes SET due_at = ?2
            WHERE rowid IN (SELECT rowid FROM push_wakes WHERE due_at IS NOT NULL AND due_at <= ?1 ORDER BY due_at LIMIT ?3)
            RETURNING token_id, household_id, seq, attempts, queued_at
            """, [.integer(now), .integer(lease), .int(limit)])
        var wakes: [PushWake] = [], dropped = 0
        for row in taken {
            let (token, household) = (row.string(0), row.string(1))
            // Still a live token of a member, still registered: else the wake has nobody to go to.
            if let r = try db.queryOne("""
                SELECT \(Self.registrationSelect)
                FROM push_registrations r JOIN tokens t ON t.id = r.token_id AND t.revoked_at IS NULL
                WHERE r.token_id = ?2 AND r.account_id IN (\(Self.membersSQL))
                UNION ALL
                SELECT \(Self.registrationSelect)
                FROM push_registrations r JOIN child_tokens c ON c.id = r.token_id AND c.revoked_at IS NULL
                WHERE r.token_id = ?2 AND r.household_id = ?1 AND c.household_id = ?1
                """, [.text(household), .text(token)]) {
                wakes.append(PushWake(householdId: household, seq: row.int(2), attempts: Int(row.int(3)), queuedAt: row.int(4),
                                      registration: Self.registration(r)))
            } else {
                try db.run("DELETE FROM push_wakes WHERE token_id = ? AND household_id = ?", [.text(token), .text(household)])
                dropped += 1
            }
        }
        let next = try db.queryOne("SELECT min(due_at) FROM push_wakes")?.optionalInt(0)
        return PushWakeClaim(wakes: wakes, dropped: dropped, nextDue: next)
    }

    func finishPushWake(token: String, household: String, sentSeq: Int64, quietUntil: Int64) throws {
        let db = try self.db
        try db.run("""
            UPDATE push_wakes SET sent_seq = ?3, attempts = 0, quiet_until = ?4,
                due_at = CASE WHEN seq > ?3 THEN ?4 END, queued_at = CASE WHEN seq > ?3 THEN ?4 ELSE queued_at END
            WHERE token_id = ?1 AND household_id = ?2
            """, [.text(token), .text(household), .integer(sentSeq), .integer(quietUntil)])
    }

    func postponePushWake(token: String, household: String, to at: Int64) throws {
        try db.run("UPDATE push_wakes SET due_at = ?, attempts = attempts + 1 WHERE token_id = ? AND household_id = ?",
                   [.integer(at), .text(token), .text(household)])
    }
}
