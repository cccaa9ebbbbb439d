import LedgerCore
import LedgerModel

extension PushResult {
    /// `{type, id, status, changeTag?, serverRecord?, code?, fields?, restoredBy?}`.
    var json: JSONValue {
        var o: JSONObject = ["type": .string(kind.rawValue), "id": .string(id)]
        if let restoredBy { o["restoredBy"] = .string(restoredBy) }
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
        case .scheduleConflict(let record):
            o["status"] = .string("conflict")
            o["serverRecord"] = record.json
        case .requestConflict(let record):
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
        if restoredBy != nil { return json.write(into: &out) }
        switch outcome {
        case .saved(let tag): (status, extraKey, extra) = ("saved", tag == nil ? nil : "changeTag", tag)
        case .unchanged(let tag): (status, extraKey, extra) = ("unchanged", tag == nil ? nil : "changeTag", tag)
        case .refused(let e): (status, extraKey, extra) = ("rejected", "code", e.pushRejectionCode ?? e.apiError.code)
        case .invalid(let code, let fields) where fields.isEmpty: (status, extraKey, extra) = ("rejected", "code", code)
        case .childConflict, .transactionConflict, .scheduleConflict, .requestConflict, .invalid:
            json.write(into: &out)
            return
        }
        // `{"type":"transaction","id":` 27, `,"status":"unchanged"` 21, `}` 1; `,"changeTag":` 13.
        let bound = 49 + ByteWriter.jsonStringBound(id) + (extra.map { ByteWriter.jsonStringBound($0) + 13 } ?? 0)
        out.appendWriting(maxCount: bound) { w in
            switch kind {
            case .child: w.put(literal: #"{"type":"child","id":"#)
            case .transaction: w.put(literal: #"{"type":"transaction","id":"#)
            case .schedule: w.put(literal: #"{"type":"schedule","id":"#)
            case .request: w.put(literal: #"{"type":"request","id":"#)
            }
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
