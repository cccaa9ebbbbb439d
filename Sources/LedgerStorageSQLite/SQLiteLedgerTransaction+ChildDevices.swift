import LedgerCore
import LedgerModel
import SQLiteKit

/// Children's devices (child tokens) and requests over SQLite.
extension SQLiteLedgerTransaction {
    static let childTokenColumns = "id, household_id, child_id, device_name, paired_by, created_at"
    static let requestColumns = "household_id, id, child_id, status, doc"
    static let changedRequestsSQL = [false, true].map { only in
        "SELECT \(requestColumns), seq FROM requests WHERE household_id = ? AND seq \(only ? "=" : ">") ? ORDER BY seq LIMIT ?"
    }

    // MARK: child tokens

    func childCaller(tokenHash: [UInt8]) throws -> Caller? {
        guard let r = try db.queryOne("""
            SELECT id, household_id, child_id, hash FROM child_tokens WHERE hash = ? AND revoked_at IS NULL
            """, [.blob(tokenHash)]), TokenSecret.constantTimeEqual(r.blob(3), tokenHash) else { return nil }
        return Caller(childToken: r.string(0), scope: ChildScope(householdId: r.string(1), childId: r.string(2)))
    }

    func linkCodeChild(hash: [UInt8]) throws -> ChildLinkScope? {
        guard let r = try db.queryOne("SELECT household_id, child_id, device_name FROM link_codes WHERE hash = ?", [.blob(hash)]),
              let household = r.optionalString(0), let child = r.optionalString(1) else { return nil }
        return ChildLinkScope(householdId: household, childId: child, deviceName: r.optionalString(2))
    }

    func setLinkCodeChild(hash: [UInt8], scope: ChildLinkScope) throws {
        try db.run("UPDATE link_codes SET household_id = ?, child_id = ?, device_name = ? WHERE hash = ?",
                   [.text(scope.householdId), .text(scope.childId), scope.deviceName.map { .text($0) } ?? .null, .blob(hash)])
    }

    func childDevices(household: String, child: String, after: TimeAndIdPosition?,
                      limit: Int) throws -> KeyedPage<ChildDeviceRecord, TimeAndIdPosition> {
        let rows = try db.query("""
            SELECT \(Self.childTokenColumns) FROM child_tokens
            WHERE household_id = ?1 AND child_id = ?2 AND revoked_at IS NULL AND (?3 IS NULL OR (created_at, id) > (?3, ?4))
            ORDER BY created_at, id LIMIT ?5
            """, [.text(household), .text(child), after.map { .integer($0.time) } ?? .null, .text(after?.id ?? ""),
                  .int(limit + 1)])
        return KeyedPage(rows: rows, limit: limit, item: { ChildDeviceRecord(row: $0) }) { _, d in
            TimeAndIdPosition(time: d.createdAt, id: d.id)
        }
    }

    func childDeviceCount(household: String, child: String) throws -> Int {
        Int(try db.queryOne("SELECT COUNT(*) FROM child_tokens WHERE household_id = ? AND child_id = ? AND revoked_at IS NULL",
                            [.text(household), .text(child)])?.int(0) ?? 0)
    }

    func insertChildToken(_ d: ChildDeviceRecord, hash: [UInt8]) throws {
        try db.run("""
            INSERT INTO child_tokens (id, household_id, child_id, hash, device_name, paired_by, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, [.text(d.id), .text(d.householdId), .text(d.childId), .blob(hash), .text(d.deviceName), .text(d.pairedBy),
                  .integer(d.createdAt)])
    }

    func revokeChildToken(household: String, child: String, id: String, at: Int64) throws -> Bool {
        let db = try self.db
        try db.run("""
            UPDATE child_tokens SET revoked_at = ? WHERE household_id = ? AND child_id = ? AND id = ? AND revoked_at IS NULL
            """, [.integer(at), .text(household), .text(child), .text(id)])
        guard db.changes == 1 else { return false }
        noteRevoked(token: id)
        // A revoked child's device is woken no more.
        try db.run("DELETE FROM push_registrations WHERE token_id = ? AND household_id = ?", [.text(id), .text(household)])
        return true
    }

    // MARK: requests

    func request(household: String, id: String) throws -> RequestRecord? {
        try db.queryOne("SELECT \(Self.requestColumns) FROM requests WHERE household_id = ? AND id = ?",
                        [.text(household), .text(id)]).flatMap { RequestRecord(row: $0) }
    }

    func request(household: String, paymentId: String) throws -> RequestRecord? {
        try db.queryOne("SELECT \(Self.requestColumns) FROM requests WHERE household_id = ? AND payment_id = ?",
                        [.text(household), .text(paymentId)]).flatMap { RequestRecord(row: $0) }
    }

    func requests(household: String, child: String, before: TimeAndIdPosition?,
                  limit: Int) throws -> KeyedPage<RequestRecord, TimeAndIdPosition> {
        let rows = try db.query("""
            SELECT \(Self.requestColumns), created_at FROM requests
            WHERE household_id = ?1 AND child_id = ?2 AND (?3 IS NULL OR (created_at, id) < (?3, ?4))
            ORDER BY created_at DESC, id DESC LIMIT ?5
            """, [.text(household), .text(child), before.map { .integer($0.time) } ?? .null, .text(before?.id ?? ""),
                  .int(limit + 1)]).filter { RequestRecord(row: $0) != nil }
        return KeyedPage(rows: rows, limit: limit, item: { RequestRecord(row: $0)! }) { r, q in
            TimeAndIdPosition(time: r.int(5), id: q.id)
        }
    }

    func insertRequest(_ r: RequestRecord, seq: Int64) throws {
        try db.run("""
            INSERT INTO requests (household_id, id, child_id, seq, status, payment_id, created_at, doc)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(r.householdId), .text(r.id), .text(r.childId), .integer(seq), .text(r.status.rawValue),
                  .text(r.paymentId), .integer(r.createdAt), .text(r.document)])
    }

    func updateRequest(_ r: RequestRecord, seq: Int64) throws {
        try db.run("UPDATE requests SET status = ?3, doc = ?4, seq = ?5 WHERE household_id = ?1 AND id = ?2",
                    [.text(r.householdId), .text(r.id), .text(r.status.rawValue), .text(r.document), .integer(seq)])
    }
}
