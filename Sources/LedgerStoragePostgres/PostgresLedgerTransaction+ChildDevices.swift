#if Postgres
import LedgerCore
import LedgerModel
import PostgresKit

/// Children's devices (child tokens) and requests over PostgreSQL.
extension PostgresLedgerTransaction {
    static let childTokenColumns = "id, household_id, child_id, device_name, paired_by, created_at"
    static let requestColumns = "household_id, id, child_id, status, doc"

    // MARK: child tokens

    func childCaller(tokenHash: [UInt8]) throws -> Caller? {
        guard let r = try db.queryOne("""
            SELECT id, household_id, child_id, hash FROM child_tokens WHERE hash = $1 AND revoked_at IS NULL
            """, [.bytes(tokenHash)]), TokenSecret.constantTimeEqual(r.bytea(3), tokenHash) else { return nil }
        return Caller(childToken: r.uuid(0), scope: ChildScope(householdId: r.uuid(1), childId: r.uuid(2)))
    }

    func linkCodeChild(hash: [UInt8]) throws -> ChildLinkScope? {
        guard let r = try db.queryOne("SELECT household_id, child_id, device_name FROM link_codes WHERE hash = $1", [.bytes(hash)]),
              let household = r.optionalUUID(0), let child = r.optionalUUID(1) else { return nil }
        return ChildLinkScope(householdId: household, childId: child, deviceName: r.isNull(2) ? nil : r.string(2))
    }

    func setLinkCodeChild(hash: [UInt8], scope: ChildLinkScope) throws {
        try db.query("UPDATE link_codes SET household_id = $1, child_id = $2, device_name = $3 WHERE hash = $4",
                     [.uuid(scope.householdId), .uuid(scope.childId), .optionalText(scope.deviceName), .bytes(hash)])
    }

    func childDevices(household: String, child: String, after: TimeAndIdPosition?,
                      limit: Int) throws -> KeyedPage<ChildDeviceRecord, TimeAndIdPosition> {
        sendDeferred()
        try lock(household)
        let rows = try db.query("""
            SELECT \(Self.childTokenColumns) FROM child_tokens
            WHERE household_id = $1 AND child_id = $2 AND revoked_at IS NULL AND (NOT $3 OR (created_at, id) > ($4, $5))
            ORDER BY created_at, id LIMIT $6
            """, [.uuid(household), .uuid(child), .bool(after != nil), .timestamp(ms: after?.time ?? 0),
                  .uuid(after?.id ?? Self.noId), .int(Int64(limit) + 1)]).rows
        return KeyedPage(rows: rows, limit: limit, item: { ChildDeviceRecord(row: $0) }) { _, d in
            TimeAndIdPosition(time: d.createdAt, id: d.id)
        }
    }

    func childDeviceCount(household: String, child: String) throws -> Int {
        sendDeferred()
        try lock(household)
        return Int(try db.queryOne("""
            SELECT count(*) FROM child_tokens WHERE household_id = $1 AND child_id = $2 AND revoked_at IS NULL
            """, [.uuid(household), .uuid(child)])?.int(0) ?? 0)
    }

    func insertChildToken(_ d: ChildDeviceRecord, hash: [UInt8]) throws {
        sendDeferred()
        try lock(d.householdId)
        try db.query("""
            INSERT INTO child_tokens (id, household_id, child_id, hash, device_name, paired_by, created_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            """, [.uuid(d.id), .uuid(d.householdId), .uuid(d.childId), .bytes(hash), .text(d.deviceName), .uuid(d.pairedBy),
                  .timestamp(ms: d.createdAt)])
    }

    func revokeChildToken(household: String, child: String, id: String, at: Int64) throws -> Bool {
        sendDeferred()
        try lock(household)
        let n = try db.query("""
            UPDATE child_tokens SET revoked_at = $4 WHERE household_id = $1 AND child_id = $2 AND id = $3 AND revoked_at IS NULL
            """, [.uuid(household), .uuid(child), .uuid(id), .timestamp(ms: at)]).affectedRows
        guard n > 0 else { return false }
        noteRevoked(token: id)
        // A revoked child's device is woken no more.
        try db.query("DELETE FROM push_registrations WHERE token_id = $1 AND household_id = $2", [.uuid(id), .uuid(household)])
        return true
    }

    // MARK: requests

    func request(household: String, id: String) throws -> RequestRecord? {
        sendDeferred()
        try lock(household)
        return try db.queryOne("SELECT \(Self.requestColumns) FROM requests WHERE household_id = $1 AND id = $2",
                               [.uuid(household), .uuid(id)]).flatMap { RequestRecord(row: $0) }
    }

    func request(household: String, paymentId: String) throws -> RequestRecord? {
        // Known free (`expectNewTransactions`): no transaction and no request holds the id.
        if knownFree.contains(household + " " + paymentId) { return nil }
        sendDeferred()
        try lock(household)
        return try db.queryOne("SELECT \(Self.requestColumns) FROM requests WHERE household_id = $1 AND payment_id = $2",
                               [.uuid(household), .uuid(paymentId)]).flatMap { RequestRecord(row: $0) }
    }

    func requests(household: String, child: String, before: TimeAndIdPosition?,
                  limit: Int) throws -> KeyedPage<RequestRecord, TimeAndIdPosition> {
        sendDeferred()
        try lock(household)
        let rows = try db.query("""
            SELECT \(Self.requestColumns), created_at FROM requests
            WHERE household_id = $1 AND child_id = $2 AND (NOT $3 OR (created_at, id) < ($4, $5))
            ORDER BY created_at DESC, id DESC LIMIT $6
            """, [.uuid(household), .uuid(child), .bool(before != nil), .timestamp(ms: before?.time ?? 0),
                  .uuid(before?.id ?? Self.noId), .int(Int64(limit) + 1)]).rows.filter { RequestRecord(row: $0) != nil }
        return KeyedPage(rows: rows, limit: limit, item: { RequestRecord(row: $0)! }) { r, q in
            TimeAndIdPosition(time: r.timestampMs(5), id: q.id)
        }
    }

    func insertRequest(_ r: RequestRecord, seq: Int64) throws {
        sendDeferred()
        try lock(r.householdId)
        knownFree.remove(r.householdId + " " + r.paymentId)
        try db.query("""
            INSERT INTO requests (household_id, id, child_id, seq, status, payment_id, created_at, doc)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
            """, [.uuid(r.householdId), .uuid(r.id), .uuid(r.childId), .int(seq), .text(r.status.rawValue), .uuid(r.paymentId),
                  .timestamp(ms: r.createdAt), .text(r.document)])
    }

    func updateRequest(_ r: RequestRecord, seq: Int64) throws {
        sendDeferred()
        try lock(r.householdId)
        try db.query("UPDATE requests SET status = $3, doc = $4, seq = $5 WHERE household_id = $1 AND id = $2",
                     [.uuid(r.householdId), .uuid(r.id), .text(r.status.rawValue), .text(r.document), .int(seq)])
    }
}
#endif
