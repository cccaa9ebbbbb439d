import LedgerModel

/// What became of one pushed record.
struct PushResult: Sendable {
    enum Kind: String, Sendable { case child, transaction }

    enum Outcome: Sendable {
        /// Saved as pushed; a child's new change tag.
        case saved(changeTag: String?)
        /// Already stored as pushed; a child's change tag.
        case unchanged(changeTag: String?)
        /// Another version of the child holds the id: the server's.
        case childConflict(Child)
        /// A different transaction holds the id: the server's.
        case transactionConflict(LedgerTransaction)
        /// Refused by a ledger rule or a quota.
        case refused(LedgerStorageError)
        /// Refused before storage was asked (`validation_failed` with the field errors,
        /// `clock_skew`, `modified_by_mismatch`).
        case invalid(code: String, fields: [String: String])
    }

    var kind: Kind
    var id: String
    var outcome: Outcome
}

extension LedgerWriting {
    /// `POST …/changes` by `caller`'s device: checks write access, applies the batch's
    /// children first, then its transactions, each through the same rules as the single
    /// writes (`pushChild` within the `maxChildren` cap, `addTransaction`), and records the
    /// push. A record's refusal is its result and leaves the rest of the batch alone.
    func push(_ batch: PushBatch, household: String, caller: Caller, maxChildren: Int, now: Int64) throws -> [PushResult] {
        _ = try membership(household: household, account: caller.accountId, need: .write)
        var results: [PushResult] = []
        results.reserveCapacity(batch.count)
        for item in batch.children {
            switch item {
            case .invalid(let id, let code, let fields):
                results.append(PushResult(kind: .child, id: id, outcome: .invalid(code: code, fields: fields)))
            case .valid(let record) where record.modifiedBy != caller.accountId:
                // Attribution is the caller's: nobody edits in another member's name.
                results.append(PushResult(kind: .child, id: record.id, outcome: .invalid(code: "modified_by_mismatch", fields: [:])))
            case .valid(let record):
                let outcome: PushResult.Outcome
                do {
                    switch try pushChild(household: household, record, maxChildren: maxChildren) {
                    case .saved(let tag): outcome = .saved(changeTag: tag)
                    case .unchanged(let tag): outcome = .unchanged(changeTag: tag)
                    case .conflict(let current): outcome = .childConflict(current)
                    }
                } catch let e as LedgerStorageError where e == .tooManyChildren(limit: maxChildren) {
                    outcome = .refused(e)
                }
                results.append(PushResult(kind: .child, id: record.id, outcome: outcome))
            }
        }
        for item in batch.transactions {
            switch item {
            case .invalid(let id, let code, let fields):
                results.append(PushResult(kind: .transaction, id: id, outcome: .invalid(code: code, fields: fields)))
            case .valid(let record):
                let outcome: PushResult.Outcome
                do {
                    let written = try addTransaction(household: household, author: caller.accountId, record, now: now)
                    outcome = written.saved ? .saved(changeTag: nil) : .unchanged(changeTag: nil)
                } catch LedgerStorageError.transactionIdTaken(let existing) {
                    outcome = .transactionConflict(existing)
                } catch let e as LedgerStorageError {
                    outcome = .refused(e)
                }
                results.append(PushResult(kind: .transaction, id: record.id, outcome: outcome))
            }
        }
        try recordPush(token: caller.tokenId, household: household, at: now)
        return results
    }
}

extension PushResult {
    /// `{type, id, status, changeTag?, serverRecord?, code?, fields?}`.
    var json: JSONValue {
        var o: JSONObject = ["type": .string(kind.rawValue), "id": .string(id)]
        switch outcome {
        case .saved(let tag), .unchanged(let tag):
            o["status"] = .string(outcome.isSaved ? "saved" : "unchanged")
            if let tag { o["changeTag"] = .string(tag) }
        case .childConflict(let record):
            o["status"] = .string("conflict")
            o["serverRecord"] = record.json
        case .transactionConflict(let record):
            o["status"] = .string("conflict")
            o["serverRecord"] = record.json
        case .refused(let e):
            o["status"] = .string("rejected")
            o["code"] = .string(e.pushRejectionCode ?? e.apiError.code)
        case .invalid(let code, let fields):
            o["status"] = .string("rejected")
            o["code"] = .string(code)
            if !fields.isEmpty {
                var f = JSONObject()
                for k in fields.keys.sorted() { f[k] = .string(fields[k]!) }
                o["fields"] = .object(f)
            }
        }
        return .object(o)
    }
}

extension PushResult {
    /// The body of a push's answer, `{"results":[…]}`, written in one pass: the same bytes
    /// as serializing `{"results": results.map(\.json)}`, without building a JSON value per
    /// record (a push answers up to 400). Conflicts and rejections with field errors, rare,
    /// are written through `json`.
    static func answerBody(_ results: [PushResult]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16 + results.count * 80)
        out.append(literal: #"{"results":["#)
        for (i, r) in results.enumerated() {
            if i > 0 { out.append(44) }
            r.write(into: &out)
        }
        out.append(literal: "]}")
        return out
    }

    /// Appends this result's object, as `json` serializes it.
    func write(into out: inout [UInt8]) {
        let status: StaticString, extraKey: StaticString?, extra: String?
        switch outcome {
        case .saved(let tag): (status, extraKey, extra) = ("saved", tag == nil ? nil : "changeTag", tag)
        case .unchanged(let tag): (status, extraKey, extra) = ("unchanged", tag == nil ? nil : "changeTag", tag)
        case .refused(let e): (status, extraKey, extra) = ("rejected", "code", e.pushRejectionCode ?? e.apiError.code)
        case .invalid(let code, let fields) where fields.isEmpty: (status, extraKey, extra) = ("rejected", "code", code)
        case .childConflict, .transactionConflict, .invalid:
            json.write(into: &out)
            return
        }
        // `{"type":"transaction","id":` 27, `,"status":"unchanged"` 21, `}` 1; `,"changeTag":` 13.
        let bound = 49 + ByteWriter.jsonStringBound(id) + (extra.map { ByteWriter.jsonStringBound($0) + 13 } ?? 0)
        out.appendWriting(maxCount: bound) { w in
            w.put(literal: kind == .child ? #"{"type":"child","id":"# : #"{"type":"transaction","id":"#)
            w.putJSONString(id)
            w.put(literal: #","status":""#)
            w.put(literal: status)
            w.put(34)
            if let extraKey, let extra {
                w.put(literal: #",""#)
                w.put(literal: extraKey)
                w.put(literal: #"":"#)
                w.putJSONString(extra)
            }
            w.put(125)
        }
    }
}

extension PushResult.Outcome {
    var isSaved: Bool { if case .saved = self { true } else { false } }
}
