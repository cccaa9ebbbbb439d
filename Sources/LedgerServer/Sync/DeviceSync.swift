import LedgerModel
import SQLiteKit

/// The `device_sync` table: per device token and household, when it last pulled and
/// pushed and how far its last pull reached. Feeds `GET …/sync-status`.
enum DeviceSync {
    /// Records a pull as a writer job and calls `then` once it is committed (or failed:
    /// the pull is answered either way), so `sync-status` read after a pull shows it.
    static func recordPull(_ writer: WriteQueue, token: String, household: String, seq: Int64,
                           then: @escaping @Sendable () -> Void) {
        let now = Timestamp.nowMs()
        writer.submit(WriteQueue.Job(work: { db in
            // Only while the household exists: a pull racing a delete must not leave a row.
            try db.run("""
                INSERT INTO device_sync (token_id, household_id, last_pull_at, last_pull_seq)
                SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM households WHERE id = ?2)
                ON CONFLICT (token_id, household_id) DO UPDATE SET last_pull_at = excluded.last_pull_at,
                    last_pull_seq = excluded.last_pull_seq
                """, [.text(token), .text(household), .integer(now), .integer(seq)])
            return WriteQueue.WriteEffects()
        }, completion: { _ in then() }))
    }

    /// Records a push inside the push's own transaction.
    static func recordPush(_ db: SQLiteConnection, token: String, household: String) throws {
        try db.run("""
            INSERT INTO device_sync (token_id, household_id, last_push_at) VALUES (?, ?, ?)
            ON CONFLICT (token_id, household_id) DO UPDATE SET last_push_at = excluded.last_push_at
            """, [.text(token), .text(household), .integer(Timestamp.nowMs())])
    }

    /// `{householdId, latestToken, access, devices}` for a member, read in one snapshot.
    static func status(_ db: SQLiteConnection, household: String, account: String) throws -> JSONValue {
        try db.execute("BEGIN")
        defer { try? db.execute("COMMIT") }
        return try SQLiteLedgerTransaction(db).syncStatus(household: household, account: account).json(household: household)
    }

    /// Records (children and transactions) changed after `after`.
    static func changes(_ db: SQLiteConnection, household: String, after: Int64) throws -> Int64 {
        try db.queryOne("""
            SELECT (SELECT COUNT(*) FROM children WHERE household_id = ?1 AND seq > ?2)
                 + (SELECT COUNT(*) FROM transactions WHERE household_id = ?1 AND seq > ?2)
            """, [.text(household), .integer(after)])?.int(0) ?? 0
    }
}

extension SyncStatusReport {
    /// `{householdId, latestToken, access, devices}`.
    func json(household: String) -> JSONValue {
        .object([
            "householdId": .string(household), "latestToken": .string(latestToken.encoded), "access": membership.accessJSON,
            "devices": .array(devices.map { d in
                .object([
                    "tokenId": .string(d.tokenId), "accountId": .string(d.accountId), "deviceName": .string(d.deviceName),
                    "lastPullAt": d.lastPullAt.map { .string(Timestamp.format(ms: $0)) } ?? .null,
                    "lastPushAt": d.lastPushAt.map { .string(Timestamp.format(ms: $0)) } ?? .null,
                    "changesBehind": .int(d.changesBehind),
                ])
            }),
        ])
    }
}
