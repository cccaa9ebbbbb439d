import LedgerCore
import LedgerModel

/// Parsing a `POST …/changes` body. The envelope is strict (422 for the whole request when a
/// record cannot be identified); per-record problems become `rejected` results and leave the
/// rest of the batch alone.
extension PushBatch {
    /// Parses the body; 413 `batch_too_large` above `maxRecords`, 422 for a bad envelope.
    /// Stamps more than 24 hours after `now` reject their record (`clock_skew`).
    static func parse(_ body: JSONBody, maxRecords: Int, now: Int64 = Timestamp.nowMs()) throws -> PushBatch {
        var envelope = body
        envelope.allowOnly(["children", "transactions", "schedules", "requests", "ownerRestore"])
        let kids = array(&envelope, "children"), txs = array(&envelope, "transactions")
        let plans = array(&envelope, "schedules"), asked = array(&envelope, "requests")
        let ownerRestore = envelope.bool("ownerRestore") ?? false
        try envelope.check()
        let total = kids.count + txs.count + plans.count + asked.count
        if total > maxRecords {
            throw APIError(413, "batch_too_large", "A push holds at most \(maxRecords) records; this one has \(total).")
        }
        var idErrors: [String: String] = [:]
        var batch = PushBatch()
        batch.ownerRestore = ownerRestore
        batch.children.reserveCapacity(kids.count)
        batch.transactions.reserveCapacity(txs.count)
        for (i, v) in kids.enumerated() {
            guard let (o, id) = identified(v, "children", i, &idErrors) else { continue }
            batch.children.append(child(o, id: id, now: now))
        }
        for (i, v) in txs.enumerated() {
            guard let (o, id) = identified(v, "transactions", i, &idErrors) else { continue }
            var item = transaction(o, id: id, now: now)
            switch o["authorAccountId"] {
            case nil, .null?: break
            case .string(let raw)? where LedgerIDs.lowercaseCanonical(raw) != nil: batch.authors[id] = LedgerIDs.lowercaseCanonical(raw)
            default: item = .invalid(id: id, code: "validation_failed", fields: ["authorAccountId": "must be a UUID"])
            }
            batch.transactions.append(item)
        }
        for (i, v) in plans.enumerated() {
            guard let (o, id) = identified(v, "schedules", i, &idErrors) else { continue }
            batch.schedules.append(schedule(o, id: id, now: now))
        }
        for (i, v) in asked.enumerated() {
            guard let (o, id) = identified(v, "requests", i, &idErrors) else { continue }
            batch.requests.append(request(o, id: id, now: now))
        }
        if !idErrors.isEmpty { throw APIError.validation(idErrors) }
        return batch
    }

    private static func array(_ b: inout JSONBody, _ key: String) -> [JSONValue] {
        switch b.object[key] {
        case nil, .null?: return []
        case .array(let a)?: return a
        case let v?: b.fail(key, "must be an array, not \(v.typeName)"); return []
        }
    }

    /// The object at `list[index]` and its id in canonical form; nil, with an error under
    /// `list[index]` (named only then), when it is not an object with a UUID id.
    private static func identified(_ v: JSONValue, _ list: String, _ index: Int,
                                   _ errors: inout [String: String]) -> (JSONObject, String)? {
        guard case .object(let o) = v else { errors["\(list)[\(index)]"] = "must be an object, not \(v.typeName)"; return nil }
        guard case .string(let raw)? = o["id"], let id = LedgerIDs.lowercaseCanonical(raw) else {
            errors["\(list)[\(index)].id"] = o["id"] == nil ? "is required" : "must be a UUID"
            return nil
        }
        return (o, id)
    }

    /// The fields a pushed child and transaction may have (one array each, not one per record).
    private static let childFields = ["id", "name", "sortOrder", "archived", "createdAt", "modifiedAt", "modifiedBy", "baseChangeTag"]
    private static let transactionFields = ["id", "childId", "amountCents", "note", "source", "createdAt", "reversesId",
                                            "authorAccountId"]

    private static func child(_ o: JSONObject, id: String, now: Int64) -> Item<ChildRecord> {
        var b = JSONBody(o)
        b.allowOnly(childFields)
        let name = b.name("name", required: true)
        let sortOrder = b.int("sortOrder", required: true)
        let archived = b.bool("archived")
        if archived == nil, b.errors["archived"] == nil { b.fail("archived", "is required") }
        let createdAt = b.timestamp("createdAt", required: true)
        let modifiedAt = b.timestamp("modifiedAt", required: true)
        let modifiedBy = b.uuid("modifiedBy", required: true)
        let base = b.string("baseChangeTag")
        guard b.errors.isEmpty, let name, let sortOrder, let archived, let createdAt, let modifiedAt, let modifiedBy else {
            return .invalid(id: id, code: "validation_failed", fields: b.errors)
        }
        if NewTransaction.clockSkew([("createdAt", createdAt), ("modifiedAt", modifiedAt)], now: now) != nil {
            return .invalid(id: id, code: "clock_skew", fields: [:])
        }
        return .valid(ChildRecord(id: id, name: name, sortOrder: sortOrder, archived: archived, createdAt: createdAt,
                                  modifiedAt: modifiedAt, modifiedBy: modifiedBy, baseChangeTag: base))
    }

    private static let scheduleFields = ["id", "childId", "kind", "amountCents", "rateBasisPoints", "cadence", "firstDate",
                                         "timeZone", "endDate", "note", "paused", "split", "deleted", "backPay", "createdAt",
                                         "modifiedAt", "modifiedBy", "baseChangeTag", "nextDueDate"]

    /// A pushed schedule: the fields of a POST, `childId`, the stamps, and `deleted?`,
    /// `backPay?`, `baseChangeTag?` (`nextDueDate`, the server's, is ignored).
    private static func schedule(_ o: JSONObject, id: String, now: Int64) -> Item<ScheduleItem> {
        var b = JSONBody(o)
        b.allowOnly(scheduleFields)
        let childId = b.uuid("childId", required: true)
        let draft = b.scheduleDraft(id: id, childId: childId ?? id)
        let deleted = b.bool("deleted") ?? false, backPay = b.bool("backPay") ?? false
        let createdAt = b.timestamp("createdAt", required: true)
        let modifiedAt = b.timestamp("modifiedAt", required: true)
        let modifiedBy = b.uuid("modifiedBy", required: true)
        let base = b.string("baseChangeTag")
        guard b.errors.isEmpty, childId != nil, let draft, let createdAt, let modifiedAt, let modifiedBy else {
            return .invalid(id: id, code: "validation_failed", fields: b.errors)
        }
        if NewTransaction.clockSkew([("createdAt", createdAt), ("modifiedAt", modifiedAt)], now: now) != nil {
            return .invalid(id: id, code: "clock_skew", fields: [:])
        }
        return .valid(ScheduleItem(draft: draft, deleted: deleted, backPay: backPay, createdAt: createdAt,
                                   modifiedAt: modifiedAt, modifiedBy: modifiedBy, baseChangeTag: base))
    }

    /// A request's JSON as the server sends it; the server's own fields (`householdId`,
    /// `paymentId`, `createdBy`, `createdAt`, `modifiedAt`, `changeTag`) are ignored.
    private static let requestFields = ["id", "childId", "kind", "amountCents", "requestedCents", "note", "status", "decidedBy",
                                        "decidedAt", "decisionNote", "householdId", "paymentId", "createdBy", "createdAt",
                                        "modifiedAt", "changeTag"]

    /// A pushed request: `{id, childId, kind, requestedCents (else amountCents), note?,
    /// status, and when decided decidedBy, decidedAt, amountCents (approved) or decisionNote}`.
    private static func request(_ o: JSONObject, id: String, now: Int64) -> Item<RequestItem> {
        var b = JSONBody(o)
        b.allowOnly(requestFields)
        let childId = b.uuid("childId", required: true)
        let kindText = b.string("kind", required: true)
        let kind = kindText.flatMap(RequestRecord.Kind.init(rawValue:))
        if kindText != nil, kind == nil { b.fail("kind", "must be spend or chore") }
        let amount = b.int("amountCents", required: true)
        let requested = b.int("requestedCents") ?? amount
        for (field, v) in [("amountCents", amount), ("requestedCents", requested)] {
            if let v, v <= 0 || v > 100_000_000_000 { b.fail(field, "must be from 1 to 100000000000") }
        }
        let note = b.string("note") ?? ""
        if case .failure(let e) = Validation.note(note) { b.fail("note", e.message) }
        let statusText = b.string("status", required: true)
        let status = statusText.flatMap(RequestRecord.Status.init(rawValue:))
        if statusText != nil, status == nil { b.fail("status", "must be pending, approved or declined") }
        let decidedBy = b.uuid("decidedBy", required: status != nil && status != .pending)
        let decidedAt = b.timestamp("decidedAt", required: status != nil && status != .pending)
        var decisionNote: String?
        switch o["decisionNote"] {
        case nil, .null?: break
        default:
            decisionNote = b.string("decisionNote")
            if let n = decisionNote, case .failure(let e) = Validation.note(n) { b.fail("decisionNote", e.message) }
        }
        guard b.errors.isEmpty, let childId, let kind, let amount, let requested, let status else {
            return .invalid(id: id, code: "validation_failed", fields: b.errors)
        }
        if NewTransaction.clockSkew("decidedAt", decidedAt, now: now) != nil {
            return .invalid(id: id, code: "clock_skew", fields: [:])
        }
        return .valid(RequestItem(id: id, childId: childId, kind: kind, requestedCents: requested, note: note, status: status,
                                  approvedCents: status == .approved ? amount : nil, decisionNote: decisionNote,
                                  decidedBy: decidedBy, decidedAt: decidedAt))
    }

    private static func transaction(_ o: JSONObject, id: String, now: Int64) -> Item<NewTransaction> {
        var b = JSONBody(o)
        b.allowOnly(transactionFields)
        let childId = b.uuid("childId", required: true)
        let fields = NewTransaction.fields(&b, complete: true)
        let reversesId = b.uuid("reversesId")
        guard b.errors.isEmpty, let childId, let fields else {
            return .invalid(id: id, code: "validation_failed", fields: b.errors)
        }
        if NewTransaction.clockSkew("createdAt", fields.createdAt, now: now) != nil {
            return .invalid(id: id, code: "clock_skew", fields: [:])
        }
        return .valid(NewTransaction(id: id, childId: childId, amountCents: fields.amountCents, note: fields.note,
                                                 source: fields.source, createdAt: fields.createdAt, reversesId: reversesId,
                                                 clientChosenId: true))
    }
}
