import LedgerModel
import SQLiteKit

extension PushBatch {
    /// What applying a batch produced.
    struct Outcome {
        /// One result per record: children first, then transactions, in request order.
        var results: [JSONValue]
        /// Whether any record was saved (the household's feed moved).
        var changed: Bool
    }

    /// Applies the batch on the writer's connection (inside its transaction): children
    /// first, then transactions. The caller has checked write access.
    func apply(_ db: SQLiteConnection, household: String, author: String, maxChildren: Int = 0) throws -> Outcome {
        var results: [JSONValue] = []
        results.reserveCapacity(count)
        var changed = false
        for item in children {
            switch item {
            case .invalid(let id, let code, let fields):
                results.append(PushBatch.rejected("child", id, code, fields: fields))
            case .valid(let record) where record.modifiedBy != author:
                // Attribution is the caller's: nobody edits in another member's name.
                results.append(PushBatch.rejected("child", record.id, "modified_by_mismatch"))
            case .valid(let record):
                let (result, saved) = try PushBatch.applyChild(db, household: household, record, maxChildren: maxChildren)
                results.append(result)
                changed = changed || saved
            }
        }
        for item in transactions {
            switch item {
            case .invalid(let id, let code, let fields):
                results.append(PushBatch.rejected("transaction", id, code, fields: fields))
            case .valid(let record):
                let (result, saved) = try PushBatch.applyTransaction(db, household: household, author: author, record)
                results.append(result)
                changed = changed || saved
            }
        }
        return Outcome(results: results, changed: changed)
    }

    /// New id: insert. Same content: unchanged. Base tag matches: update. Else conflict.
    static func applyChild(_ db: SQLiteConnection, household: String, _ c: ChildRecord, maxChildren: Int = 0) throws -> (JSONValue, Bool) {
        guard let current = try LedgerStore.findChild(db, household: household, id: c.id) else {
            if let full = try Quotas.childrenFull(db, household: household, limit: maxChildren) {
                return (rejected("child", c.id, full.code), false)
            }
            let seq = try LedgerStore.nextSeq(db, household)
            try db.run("""
                INSERT INTO children (id, household_id, name, sort_order, archived, created_at, modified_at, modified_by, change_tag, balance_cents, seq)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 0, ?)
                """, [.text(c.id), .text(household), .text(c.name), .integer(c.sortOrder), .bool(c.archived),
                      .integer(c.createdAt), .integer(c.modifiedAt), .text(c.modifiedBy), .text(LedgerStore.tag(seq)), .integer(seq)])
            return (result("child", c.id, "saved", changeTag: LedgerStore.tag(seq)), true)
        }
        if current.name == c.name && current.sortOrder == c.sortOrder && current.archived == c.archived {
            return (result("child", c.id, "unchanged", changeTag: current.changeTag), false)
        }
        guard c.baseChangeTag == current.changeTag else {
            return (result("child", c.id, "conflict", serverRecord: current.json), false)
        }
        let seq = try LedgerStore.nextSeq(db, household)
        try db.run("UPDATE children SET name = ?, sort_order = ?, archived = ?, modified_at = ?, modified_by = ?, change_tag = ?, seq = ? WHERE household_id = ? AND id = ?",
                   [.text(c.name), .integer(c.sortOrder), .bool(c.archived), .integer(c.modifiedAt), .text(c.modifiedBy),
                    .text(LedgerStore.tag(seq)), .integer(seq), .text(household), .text(c.id)])
        return (result("child", c.id, "saved", changeTag: LedgerStore.tag(seq)), true)
    }

    /// Insert-if-absent through `LedgerStore.insertTransaction`, its refusals as results.
    static func applyTransaction(_ db: SQLiteConnection, household: String, author: String,
                                 _ t: LedgerStore.NewTransaction) throws -> (JSONValue, Bool) {
        do {
            switch try LedgerStore.insertTransaction(db, household: household, author: author, t) {
            case .saved: return (result("transaction", t.id, "saved"), true)
            case .unchanged: return (result("transaction", t.id, "unchanged"), false)
            }
        } catch let r as LedgerStore.InsertRefusal {
            guard r.code == "id_conflict", let existing = r.existing else { return (rejected("transaction", t.id, r.code), false) }
            if existing.id != t.id {
                // The target is already reversed by another record.
                return (rejected("transaction", t.id, "not_reversible"), false)
            }
            return (result("transaction", t.id, "conflict", serverRecord: existing.json), false)
        }
    }

    static func result(_ type: String, _ id: String, _ status: String, changeTag: String? = nil,
                       serverRecord: JSONValue? = nil) -> JSONValue {
        var o: JSONObject = ["type": .string(type), "id": .string(id), "status": .string(status)]
        if let changeTag { o["changeTag"] = .string(changeTag) }
        if let serverRecord { o["serverRecord"] = serverRecord }
        return .object(o)
    }

    static func rejected(_ type: String, _ id: String, _ code: String, fields: [String: String] = [:]) -> JSONValue {
        var o: JSONObject = ["type": .string(type), "id": .string(id), "status": .string("rejected"), "code": .string(code)]
        if !fields.isEmpty {
            var f = JSONObject()
            for k in fields.keys.sorted() { f[k] = .string(fields[k]!) }
            o["fields"] = .object(f)
        }
        return .object(o)
    }
}
