import LedgerModel
import SQLiteKit

/// The kind of a queued record.
enum RecordKind: String, Sendable, Equatable, CaseIterable {
    case child
    case pot
    case schedule
    case request
    case transaction
}

/// One entry of the pending queue: a record whose current state must reach the server.
struct PendingChange: Sendable, Equatable {
    var kind: RecordKind
    var id: String
    /// Grows on every local edit of the record; a push only clears the entry when the
    /// version it read is still the current one.
    var version: Int64
}

extension LedgerStore {
    /// Queues `id` (or bumps its version when already queued). Call inside the transaction
    /// that wrote the record.
    func enqueue(_ kind: RecordKind, id: String) throws {
        try db.run("INSERT INTO counters (name, value) VALUES ('queue', 1) ON CONFLICT(name) DO UPDATE SET value = value + 1")
        let version = try db.queryOne("SELECT value FROM counters WHERE name = 'queue'")?.int(0) ?? 1
        try db.run("INSERT INTO pending (kind, id, version) VALUES (?, ?, ?) ON CONFLICT(kind, id) DO UPDATE SET version = excluded.version",
                   [.text(kind.rawValue), .text(id), .integer(version)])
    }

    /// Number of queued records.
    func pendingCount() throws -> Int {
        if let readMemo { return readMemo.pendingCount }
        return Int(try db.queryOne("SELECT COUNT(*) FROM pending")?.int(0) ?? 0)
    }

    /// The next batch to push: children, then pots, schedules, requests and transactions (what a record
    /// names comes first), each in edit order.
    func pendingBatch(limit: Int) throws -> [PendingChange] {
        try db.query("""
            SELECT kind, id, version FROM pending
            ORDER BY CASE kind WHEN 'child' THEN 0 WHEN 'pot' THEN 1 WHEN 'schedule' THEN 2 WHEN 'request' THEN 3 ELSE 4 END, version LIMIT ?
            """, [.int(limit)]).map {
            PendingChange(kind: RecordKind(rawValue: $0.string(0)) ?? .transaction, id: $0.string(1), version: $0.int(2))
        }
    }

    /// The queued records of `kind`, in edit order.
    func pendingChanges(_ kind: RecordKind) throws -> [PendingChange] {
        try db.query("SELECT id, version FROM pending WHERE kind = ? ORDER BY version", [.text(kind.rawValue)]).map {
            PendingChange(kind: kind, id: $0.string(0), version: $0.int(1))
        }
    }

    /// The ids of the queued records of `kind`.
    func pendingIds(_ kind: RecordKind) throws -> [String] {
        try db.query("SELECT id FROM pending WHERE kind = ?", [.text(kind.rawValue)]).map { $0.string(0) }
    }

    /// The queued version of a record, nil when it has no local change.
    func pendingVersion(_ kind: RecordKind, id: String) throws -> Int64? {
        try db.queryOne("SELECT version FROM pending WHERE kind = ? AND id = ?", [.text(kind.rawValue), .text(id)])?.int(0)
    }

    /// Removes a queue entry; with `ifVersion`, only when no newer edit happened meanwhile (the
    /// compare-and-set that lets two engines on one file push the same queue).
    func dequeue(_ kind: RecordKind, id: String, ifVersion: Int64? = nil) throws {
        if let ifVersion {
            try db.run("DELETE FROM pending WHERE kind = ? AND id = ? AND version = ?",
                       [.text(kind.rawValue), .text(id), .integer(ifVersion)])
        } else {
            try db.run("DELETE FROM pending WHERE kind = ? AND id = ?", [.text(kind.rawValue), .text(id)])
        }
    }

    // MARK: Rejected

    /// Keeps a record the server refused for good: its code, why in words, when, and the record
    /// as it was (`json`: a transaction or a pushed child).
    func markRejected(_ kind: RecordKind, id: String, code: String, detail: String, json: String, now: Int64) throws {
        try db.run("INSERT OR REPLACE INTO rejected (kind, id, code, detail, json, rejected_at) VALUES (?, ?, ?, ?, ?, ?)",
                   [.text(kind.rawValue), .text(id), .text(code), .text(detail), .text(json), .integer(now)])
    }

    /// Changes the server refused that the user has not dismissed, oldest first.
    func rejectedChanges() throws -> [RejectedRecord] {
        try db.query("SELECT kind, id, code, detail, json, rejected_at FROM rejected ORDER BY rejected_at, rowid").map {
            RejectedRecord(kind: RecordKind(rawValue: $0.string(0)) ?? .transaction, id: $0.string(1), code: $0.string(2),
                           detail: $0.string(3), json: $0.string(4), rejectedAt: $0.int(5))
        }
    }

    /// Forgets a refused change once the user has seen it; false when there was none.
    @discardableResult
    func dismissRejected(_ kind: RecordKind, id: String) throws -> Bool {
        try db.run("DELETE FROM rejected WHERE kind = ? AND id = ?", [.text(kind.rawValue), .text(id.lowercased())])
        return db.changes > 0
    }

    /// Records the server refused, as (kind, id, code).
    func rejectedRecords() throws -> [(kind: String, id: String, code: String)] {
        try rejectedChanges().map { ($0.kind.rawValue, $0.id, $0.code) }
    }

    // MARK: Unmerged

    /// Sets aside a pulled record that cannot be merged (kind `child` or `transaction`), or
    /// notes a feed page that cannot be read (kind `page`, `id` the token it was asked from).
    /// Returns true when it was not already set aside.
    @discardableResult
    func setAside(kind: String, id: String, reason: String, json: String, now: Int64) throws -> Bool {
        let known = try db.queryOne("SELECT 1 FROM unmerged WHERE kind = ? AND id = ?", [.text(kind), .text(id)]) != nil
        try db.run("INSERT OR REPLACE INTO unmerged (kind, id, reason, json, seen_at) VALUES (?, ?, ?, ?, ?)",
                   [.text(kind), .text(id), .text(reason), .text(json), .integer(now)])
        return !known
    }

    /// Pulled records and pages that could not be merged, oldest first.
    func unmergedChanges() throws -> [UnmergedRecord] {
        try db.query("SELECT kind, id, reason, json, seen_at FROM unmerged ORDER BY seen_at, rowid").map {
            UnmergedRecord(kind: $0.string(0), id: $0.string(1), reason: $0.string(2), json: $0.string(3), seenAt: $0.int(4))
        }
    }

    /// Number of records and pages set aside.
    func unmergedCount() throws -> Int {
        if let readMemo { return readMemo.unmergedCount }
        return Int(try db.queryOne("SELECT COUNT(*) FROM unmerged")?.int(0) ?? 0)
    }

    /// Drops what is set aside under `kind` (every kind when nil): a readable version arrived,
    /// or the user dismissed it.
    func clearUnmerged(kind: String? = nil, id: String? = nil) throws {
        switch (kind, id) {
        case let (kind?, id?): try db.run("DELETE FROM unmerged WHERE kind = ? AND id = ?", [.text(kind), .text(id)])
        case let (kind?, nil): try db.run("DELETE FROM unmerged WHERE kind = ?", [.text(kind)])
        default: try db.run("DELETE FROM unmerged")
        }
    }

    // MARK: Deferred

    /// Parks a pulled transaction whose child has not arrived.
    func deferTransaction(id: String, childId: String, json: String) throws {
        try db.run("INSERT OR REPLACE INTO deferred (id, child_id, json) VALUES (?, ?, ?)", [.text(id), .text(childId), .text(json)])
    }

    /// Parked transactions whose child is now present, as stored JSON.
    func readyDeferred() throws -> [(id: String, json: String)] {
        try db.query("SELECT d.id, d.json FROM deferred d JOIN children c ON c.id = d.child_id ORDER BY d.rowid").map { ($0.string(0), $0.string(1)) }
    }

    func removeDeferred(id: String) throws {
        try db.run("DELETE FROM deferred WHERE id = ?", [.text(id)])
    }

    /// Number of parked transactions.
    func deferredCount() throws -> Int {
        Int(try db.queryOne("SELECT COUNT(*) FROM deferred")?.int(0) ?? 0)
    }
}

/// A local change the server refused for good. It is off the queue and, for a transaction, out
/// of the balances (the server's ledger never held it, so counting it would make this device
/// disagree with every other one), but kept here with the reason until the user dismisses it.
struct RejectedRecord: Sendable, Equatable {
    var kind: RecordKind
    var id: String
    /// The server's stable code, e.g. `unknown_child`, `not_reversible`, `id_conflict`.
    var code: String
    /// Why, in words (the server's detail, or a sentence for the code).
    var detail: String
    /// The record as it was refused: a transaction, or the pushed child.
    var json: String
    /// When it was refused, in milliseconds since the epoch.
    var rejectedAt: Int64

    /// The refused transaction, for a transaction.
    var transaction: TransactionRecord? {
        guard kind == .transaction else { return nil }
        return (try? JSONDecoderBox.decode(Wire.Transaction.self, json))?.record()
    }

    /// The refused version of the child, for a child.
    var child: ChildRecord? {
        guard kind == .child, let c = try? JSONDecoderBox.decode(Wire.PushChild.self, json),
              let created = Timestamp.parse(c.createdAt), let modified = Timestamp.parse(c.modifiedAt) else { return nil }
        return ChildRecord(id: c.id, name: c.name, sortOrder: c.sortOrder, archived: c.archived, createdAt: created,
                           modifiedAt: modified, modifiedBy: c.modifiedBy, changeTag: c.baseChangeTag)
    }
}

/// A pulled record (kind `child` or `transaction`) that could not be merged, or a feed page
/// (kind `page`) that could not be read. Kept until a readable version arrives or it is dismissed.
struct UnmergedRecord: Sendable, Equatable {
    var kind: String
    var id: String
    var reason: String
    /// The record as received (empty for a page).
    var json: String
    var seenAt: Int64
}
