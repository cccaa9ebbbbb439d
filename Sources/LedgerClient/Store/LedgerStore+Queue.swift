import SQLiteKit

/// The kind of a queued record.
public enum RecordKind: String, Sendable, Equatable {
    case child
    case transaction
}

/// One entry of the pending queue: a record whose current state must reach the server.
public struct PendingChange: Sendable, Equatable {
    public var kind: RecordKind
    public var id: String
    /// Grows on every local edit of the record; a push only clears the entry when the
    /// version it read is still the current one.
    public var version: Int64
}

extension LedgerStore {
    /// Queues `id` (or bumps its version when already queued). Call inside the transaction
    /// that wrote the record.
    public func enqueue(_ kind: RecordKind, id: String) throws {
        try db.run("INSERT INTO counters (name, value) VALUES ('queue', 1) ON CONFLICT(name) DO UPDATE SET value = value + 1")
        let version = try db.queryOne("SELECT value FROM counters WHERE name = 'queue'")?.int(0) ?? 1
        try db.run("INSERT INTO pending (kind, id, version) VALUES (?, ?, ?) ON CONFLICT(kind, id) DO UPDATE SET version = excluded.version",
                   [.text(kind.rawValue), .text(id), .integer(version)])
    }

    /// Number of queued records.
    public func pendingCount() throws -> Int {
        Int(try db.queryOne("SELECT COUNT(*) FROM pending")?.int(0) ?? 0)
    }

    /// The next batch to push: children before transactions, each in edit order.
    public func pendingBatch(limit: Int) throws -> [PendingChange] {
        try db.query("""
            SELECT kind, id, version FROM pending
            ORDER BY CASE kind WHEN 'child' THEN 0 ELSE 1 END, version LIMIT ?
            """, [.int(limit)]).map {
            PendingChange(kind: RecordKind(rawValue: $0.string(0)) ?? .transaction, id: $0.string(1), version: $0.int(2))
        }
    }

    /// The queued version of a record, nil when it has no local change.
    public func pendingVersion(_ kind: RecordKind, id: String) throws -> Int64? {
        try db.queryOne("SELECT version FROM pending WHERE kind = ? AND id = ?", [.text(kind.rawValue), .text(id)])?.int(0)
    }

    /// Removes a queue entry; with `ifVersion`, only when no newer edit happened meanwhile.
    public func dequeue(_ kind: RecordKind, id: String, ifVersion: Int64? = nil) throws {
        if let ifVersion {
            try db.run("DELETE FROM pending WHERE kind = ? AND id = ? AND version = ?",
                       [.text(kind.rawValue), .text(id), .integer(ifVersion)])
        } else {
            try db.run("DELETE FROM pending WHERE kind = ? AND id = ?", [.text(kind.rawValue), .text(id)])
        }
    }

    /// Keeps a record the server refused for good, with its code.
    public func markRejected(_ kind: RecordKind, id: String, code: String, json: String, now: Int64) throws {
        try db.run("INSERT OR REPLACE INTO rejected (kind, id, code, json, rejected_at) VALUES (?, ?, ?, ?, ?)",
                   [.text(kind.rawValue), .text(id), .text(code), .text(json), .integer(now)])
    }

    /// Records the server refused, as (kind, id, code).
    public func rejectedRecords() throws -> [(kind: String, id: String, code: String)] {
        try db.query("SELECT kind, id, code FROM rejected ORDER BY rejected_at").map { ($0.string(0), $0.string(1), $0.string(2)) }
    }

    // MARK: Deferred

    /// Parks a pulled transaction whose child has not arrived.
    public func deferTransaction(id: String, childId: String, json: String) throws {
        try db.run("INSERT OR REPLACE INTO deferred (id, child_id, json) VALUES (?, ?, ?)", [.text(id), .text(childId), .text(json)])
    }

    /// Parked transactions whose child is now present, as stored JSON.
    public func readyDeferred() throws -> [(id: String, json: String)] {
        try db.query("SELECT d.id, d.json FROM deferred d JOIN children c ON c.id = d.child_id ORDER BY d.rowid").map { ($0.string(0), $0.string(1)) }
    }

    public func removeDeferred(id: String) throws {
        try db.run("DELETE FROM deferred WHERE id = ?", [.text(id)])
    }

    /// Number of parked transactions.
    public func deferredCount() throws -> Int {
        Int(try db.queryOne("SELECT COUNT(*) FROM deferred")?.int(0) ?? 0)
    }
}
