#if Postgres
import LedgerCore
import LedgerModel
import PostgresKit

/// The push primitives over the schema's migration 7, shared by every process. A wake is
/// queued by an upsert in the transaction of its change (the household's row is locked
/// first, so its seq is the committed one); a claim takes due rows `FOR UPDATE SKIP
/// LOCKED` and moves their due time to the lease's end, so two processes never take one
/// row and never wait for each other.
extension PostgresLedgerTransaction: PushWriting {
    private static let registrationColumns =
        "r.token_id, r.account_id, r.household_id, r.child_id, r.app_id, r.push_key, r.gateway, r.registered_at"

    private static func registration(_ r: PGRow) -> PushRegistration {
        let child = r.optionalUUID(2).flatMap { h in r.optionalUUID(3).map { ChildScope(householdId: h, childId: $0) } }
        return PushRegistration(tokenId: r.uuid(0), accountId: r.optionalUUID(1) ?? Caller.noAccount, child: child,
                                appId: r.string(4), pushKey: r.string(5), gateway: r.string(6), registeredAt: r.timestampMs(7))
    }

    /// The members of household `$1` (its owner and accepted participants).
    private static let membersSQL = """
        SELECT owner_account_id FROM households WHERE id = $1
        UNION ALL SELECT account_id FROM participants WHERE household_id = $1 AND status = 'accepted'
        """

    func pushRegistrations(tokens: [String]) throws -> [String: PushRegistration] {
        let ids = tokens.filter { LedgerIDs.parse($0) != nil }
        guard !ids.isEmpty else { return [:] }
        let rows = try db.query("SELECT \(Self.registrationColumns) FROM push_registrations r WHERE r.token_id = ANY($1::text::uuid[])",
                                [.text("{" + ids.joined(separator: ",") + "}")]).rows
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
            try db.query("""
                DELETE FROM push_registrations
                WHERE household_id = $1 AND child_id = $2 AND app_id = $3 AND push_key = $4 AND token_id <> $5
                """, [.uuid(child.householdId), .uuid(child.childId), .text(r.appId), .text(r.pushKey), .uuid(r.tokenId)])
        } else {
            try db.query("DELETE FROM push_registrations WHERE account_id = $4 AND app_id = $1 AND push_key = $2 AND token_id <> $3",
                         [.text(r.appId), .text(r.pushKey), .uuid(r.tokenId), .uuid(r.accountId)])
        }
        try db.query("""
            INSERT INTO push_registrations (token_id, account_id, household_id, child_id, app_id, push_key, gateway, registered_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            ON CONFLICT (token_id) DO UPDATE SET app_id = excluded.app_id, push_key = excluded.push_key,
                gateway = excluded.gateway, registered_at = excluded.registered_at
            """, [.uuid(r.tokenId), r.child == nil ? .uuid(r.accountId) : .null, .optionalUUID(r.child?.householdId),
                  .optionalUUID(r.child?.childId), .text(r.appId), .text(r.pushKey), .text(r.gateway),
                  .timestamp(ms: r.registeredAt)])
    }

    func deletePushRegistration(token: String, pushKey: String?) throws -> Bool {
        guard LedgerIDs.parse(token) != nil else { return false }
        return try db.query("DELETE FROM push_registrations WHERE token_id = $1 AND ($2::text IS NULL OR push_key = $2::text)",
                            [.uuid(token), .optionalText(pushKey)]).affectedRows > 0
    }

    func queuePushWakes(household: String, except author: String?, now: Int64) throws -> Int {
        Int(try db.query("""
            INSERT INTO push_wakes (token_id, household_id, seq, due_at, queued_at)
            SELECT r.token_id, h.id, h.seq, $3, $3
            FROM households h JOIN push_registrations r ON r.account_id IN (\(Self.membersSQL))
            WHERE h.id = $1 AND r.token_id IS DISTINCT FROM $2::uuid
            UNION ALL
            -- The household's children's devices: their feed may have moved.
            SELECT r.token_id, h.id, h.seq, $3, $3
            FROM households h JOIN push_registrations r ON r.household_id = h.id
            WHERE h.id = $1 AND r.token_id IS DISTINCT FROM $2::uuid
            ON CONFLICT (token_id, household_id) DO UPDATE SET seq = GREATEST(push_wakes.seq, excluded.seq),
                queued_at = CASE WHEN push_wakes.due_at IS NULL THEN excluded.queued_at ELSE push_wakes.queued_at END,
                due_at = COALESCE(push_wakes.due_at, GREATEST(excluded.due_at, push_wakes.quiet_until))
            """, [.uuid(household), .optionalUUID(author), .timestamp(ms: now)]).affectedRows)
    }

    func claimPushWakes(now: Int64, lease: Int64, limit: Int) throws -> PushWakeClaim {
        let taken = try db.query("""
            UPDATE push_wakes w SET due_at = $2
            FROM (SELECT token_id, household_id FROM push_wakes WHERE due_at IS NOT NULL AND due_at <= $1 ORDER BY due_at LIMIT $3
                  FOR UPDATE SKIP LOCKED) c
            WHERE w.token_id = c.token_id AND w.household_id = c.household_id
            RETURNING w.token_id, w.household_id, w.seq, w.attempts, w.queued_at
            """, [.timestamp(ms: now), .timestamp(ms: lease), .int(Int64(limit))]).rows
        var wakes: [PushWake] = [], dropped = 0
        for row in taken {
            let (token, household) = (row.uuid(0), row.uuid(1))
            // Still a live token of a member, still registered: else the wake has nobody to go to.
            if let r = try db.queryOne("""
                SELECT \(Self.registrationColumns)
                FROM push_registrations r JOIN tokens t ON t.id = r.token_id AND t.revoked_at IS NULL
                WHERE r.token_id = $2 AND r.account_id IN (\(Self.membersSQL))
                UNION ALL
                SELECT \(Self.registrationColumns)
                FROM push_registrations r JOIN child_tokens c ON c.id = r.token_id AND c.revoked_at IS NULL
                WHERE r.token_id = $2 AND r.household_id = $1 AND c.household_id = $1
                """, [.uuid(household), .uuid(token)]) {
                wakes.append(PushWake(householdId: household, seq: row.int(2), attempts: Int(row.int(3)),
                                      queuedAt: row.timestampMs(4), registration: Self.registration(r)))
            } else {
                try db.query("DELETE FROM push_wakes WHERE token_id = $1 AND household_id = $2", [.uuid(token), .uuid(household)])
                dropped += 1
            }
        }
        let next = try db.queryOne("SELECT min(due_at) FROM push_wakes")?.optionalTimestampMs(0)
        return PushWakeClaim(wakes: wakes, dropped: dropped, nextDue: next)
    }

    func finishPushWake(token: String, household: String, sentSeq: Int64, quietUntil: Int64) throws {
        try db.query("""
            UPDATE push_wakes SET sent_seq = $3, attempts = 0, quiet_until = $4,
                due_at = CASE WHEN seq > $3 THEN $4 END, queued_at = CASE WHEN seq > $3 THEN $4 ELSE queued_at END
            WHERE token_id = $1 AND household_id = $2
            """, [.uuid(token), .uuid(household), .int(sentSeq), .timestamp(ms: quietUntil)])
    }

    func postponePushWake(token: String, household: String, to at: Int64) throws {
        try db.query("UPDATE push_wakes SET due_at = $3, attempts = attempts + 1 WHERE token_id = $1 AND household_id = $2",
                     [.uuid(token), .uuid(household), .timestamp(ms: at)])
    }
}
#endif
