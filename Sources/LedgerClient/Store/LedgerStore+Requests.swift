import SQLiteKit

extension LedgerStore {
    static let requestColumns = """
        id, child_id, kind, amount_cents, note, status, decided_by, decided_at, decision_note, payment_id, \
        created_by, created_at, modified_at, change_tag, requested_cents
        """

    static func request(from r: SQLiteRow) -> RequestRecord {
        RequestRecord(id: r.string(0), childId: r.string(1), kind: RequestRecord.Kind(rawValue: r.string(2)) ?? .spend,
                      amountCents: r.int(3), requestedCents: r.int(14), note: r.string(4), status: RequestRecord.Status(rawValue: r.string(5)) ?? .pending,
                      decidedBy: r.optionalString(6), decidedAt: r.optionalInt(7), decisionNote: r.optionalString(8),
                      paymentId: r.optionalString(9), createdBy: r.optionalString(10), createdAt: r.int(11),
                      modifiedAt: r.int(12), changeTag: r.optionalString(13))
    }

    /// The request with `id`, or nil.
    func request(id: String) throws -> RequestRecord? {
        try db.queryOne("SELECT \(Self.requestColumns) FROM requests WHERE id = ?", [.text(id)]).map(Self.request)
    }

    /// Requests, newest first: of `childId` when given, with `status` when given.
    func requests(childId: String? = nil, status: RequestRecord.Status? = nil) throws -> [RequestRecord] {
        var conditions: [String] = []
        var params: [SQLiteValue] = []
        if let childId { conditions.append("child_id = ?"); params.append(.text(childId)) }
        if let status { conditions.append("status = ?"); params.append(.text(status.rawValue)) }
        let filter = conditions.isEmpty ? "" : "WHERE " + conditions.joined(separator: " AND ")
        return try db.query("SELECT \(Self.requestColumns) FROM requests \(filter) ORDER BY created_at DESC, id", params)
            .map(Self.request)
    }

    /// How many requests wait for a decision (of `childId` when given).
    func pendingRequestCount(childId: String? = nil) throws -> Int {
        if let childId {
            return Int(try db.queryOne("SELECT COUNT(*) FROM requests WHERE status = 'pending' AND child_id = ?",
                                       [.text(childId)])?.int(0) ?? 0)
        }
        return Int(try db.queryOne("SELECT COUNT(*) FROM requests WHERE status = 'pending'")?.int(0) ?? 0)
    }

    /// Inserts or replaces a request.
    func upsert(_ r: RequestRecord) throws {
        try db.run("INSERT OR REPLACE INTO requests (\(Self.requestColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                   [.text(r.id), .text(r.childId), .text(r.kind.rawValue), .integer(r.amountCents), .text(r.note),
                    .text(r.status.rawValue), .optionalText(r.decidedBy), .optionalInteger(r.decidedAt),
                    .optionalText(r.decisionNote), .optionalText(r.paymentId), .optionalText(r.createdBy),
                    .integer(r.createdAt), .integer(r.modifiedAt), .optionalText(r.changeTag), .integer(r.requestedCents)])
    }

    /// Sets only the change tag of a request.
    func setChangeTag(requestId: String, _ tag: String?) throws {
        try db.run("UPDATE requests SET change_tag = ? WHERE id = ?", [.optionalText(tag), .text(requestId)])
    }

    /// Makes `account` the parent of every decision and of every request a parent made here.
    func attributeEveryRequest(to account: String) throws {
        try db.run("""
            UPDATE requests SET decided_by = CASE WHEN decided_by IS NULL THEN NULL ELSE ?1 END,
              created_by = CASE WHEN created_by IS NULL THEN NULL ELSE ?1 END
            """, [.text(account)])
    }
}
