import HTTPServer
import LedgerCore
import LedgerModel

/// `POST /v1/households/{id}/reconcile`: after `history_rewound`, a device finds the records
/// it holds that the server lacks by comparing summaries of transaction ids (whole per
/// child, then per bucket) and finally the ids of the buckets that differ (`ReconcileDigest`).
/// It reads only; the device pushes what is missing with `POST …/changes`. Request ids are
/// compared one by one (`requests` → `missingRequests`): a household holds few.
enum ReconcileRoutes {
    /// Most children, buckets and ids one request may name.
    static let maxChildren = 1_000
    static let maxBuckets = 16_384
    static let maxIds = 10_000

    static func reconcile(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let query = try parse(try ctx.body())
        let answer = try ctx.read { r in try r.reconcile(household: household, account: c.accountId, query) }
        return ctx.json(200, json(answer))
    }

    /// Parses the body; 413 `batch_too_large` past a limit, 422 for anything malformed.
    static func parse(_ body: JSONBody) throws -> ReconcileQuery {
        var envelope = body
        envelope.allowOnly(["children", "buckets", "ids", "requests"])
        let children = array(&envelope, "children"), buckets = array(&envelope, "buckets"), lists = array(&envelope, "ids")
        let requests = array(&envelope, "requests")
        try envelope.check()
        let idCount = lists.reduce(requests.count) { n, v in
            if case .object(let o) = v, case .array(let a)? = o["ids"] { return n + a.count }
            return n
        }
        if children.count > maxChildren || buckets.count > maxBuckets || idCount > maxIds {
            throw APIError(413, "batch_too_large", "A reconcile request names at most \(maxChildren) children, \(maxBuckets) buckets "
                           + "and \(maxIds) ids (transaction and request ids together); send the rest in another request.")
        }
        var query = ReconcileQuery()
        var errors: [String: String] = [:]
        for (i, v) in children.enumerated() {
            var b = object(v, "children[\(i)]", &errors)
            b?.allowOnly(["childId", "count", "digest"])
            guard var o = b else { continue }
            let s = summary(&o)
            collect(o, &errors)
            if let (child, summary) = s { query.children.append(.init(childId: child, summary: summary)) }
        }
        for (i, v) in buckets.enumerated() {
            var b = object(v, "buckets[\(i)]", &errors)
            b?.allowOnly(["childId", "bucket", "count", "digest"])
            guard var o = b else { continue }
            let bucket = o.int("bucket", required: true)
            if let n = bucket, !(0..<Int64(ReconcileDigest.bucketCount)).contains(n) {
                o.fail("bucket", "must be an integer from 0 to \(ReconcileDigest.bucketCount - 1)")
            }
            let s = summary(&o)
            collect(o, &errors)
            if let (child, summary) = s, let n = bucket, o.errors.isEmpty {
                query.buckets.append(.init(childId: child, bucket: Int(n), summary: summary))
            }
        }
        for (i, v) in lists.enumerated() {
            var b = object(v, "ids[\(i)]", &errors)
            b?.allowOnly(["childId", "ids"])
            guard var o = b else { continue }
            let child = o.uuid("childId", required: true)
            var ids: [String] = []
            switch o.object["ids"] {
            case .array(let a)?:
                for (j, raw) in a.enumerated() {
                    if case .string(let s) = raw, let id = LedgerIDs.lowercaseCanonical(s) { ids.append(id) } else {
                        o.fail("ids[\(j)]", "must be a UUID")
                    }
                }
            case nil, .null?: o.fail("ids", "is required")
            case let other?: o.fail("ids", "must be an array, not \(other.typeName)")
            }
            collect(o, &errors)
            if let child, o.errors.isEmpty { query.ids.append(.init(childId: child, ids: ids)) }
        }
        for (i, raw) in requests.enumerated() {
            if case .string(let s) = raw, let id = LedgerIDs.lowercaseCanonical(s) { query.requests.append(id) } else {
                errors["requests[\(i)]"] = "must be a UUID"
            }
        }
        if !errors.isEmpty { throw APIError.validation(errors) }
        return query
    }

    /// The answer's JSON.
    static func json(_ a: ReconcileAnswer) -> JSONValue {
        .object([
            "children": .array(a.children.map { c in
                .object(["childId": .string(c.childId), "known": .bool(c.child != nil), "child": c.child?.json ?? .null,
                         "count": .int(Int64(c.summary.count)), "digest": .string(c.summary.digest), "match": .bool(c.match)])
            }),
            "buckets": .array(a.buckets.map { b in
                .object(["childId": .string(b.childId), "bucket": .int(Int64(b.bucket)), "count": .int(Int64(b.summary.count)),
                         "digest": .string(b.summary.digest), "match": .bool(b.match)])
            }),
            "missing": .array(a.missing.map(JSONValue.string)),
            "missingRequests": .array(a.missingRequests.map(JSONValue.string)),
        ])
    }

    private static func array(_ b: inout JSONBody, _ key: String) -> [JSONValue] {
        switch b.object[key] {
        case nil, .null?: return []
        case .array(let a)?: return a
        case let v?: b.fail(key, "must be an array, not \(v.typeName)"); return []
        }
    }

    private static func object(_ v: JSONValue, _ name: String, _ errors: inout [String: String]) -> JSONBody? {
        guard case .object(let o) = v else { errors[name] = "must be an object, not \(v.typeName)"; return nil }
        return JSONBody(o, prefix: name + ".")
    }

    /// `childId`, `count` and `digest` of an entry; nil (with the errors in `b`) when one is wrong.
    private static func summary(_ b: inout JSONBody) -> (String, ReconcileDigest.Summary)? {
        let child = b.uuid("childId", required: true)
        let count = b.int("count", required: true)
        let digest = b.string("digest", required: true)
        if let n = count, n < 0 || n > Int64(Int32.max) { b.fail("count", "must be an integer from 0 to \(Int32.max)") }
        var summary: ReconcileDigest.Summary?
        if let n = count, let d = digest {
            summary = ReconcileDigest.Summary(count: Int(n), digest: d)
            if summary == nil { b.fail("digest", "must be 16 lowercase hexadecimal digits") }
        }
        guard let child, let summary, b.errors.isEmpty else { return nil }
        return (child, summary)
    }

    private static func collect(_ b: JSONBody?, _ errors: inout [String: String]) {
        guard let b else { return }
        for (k, v) in b.errors where errors[k] == nil { errors[k] = v }
    }
}
