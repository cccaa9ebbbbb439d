import HTTPServer
import LedgerModel

/// A failure that maps to one problem+json answer with a stable `code`.
public struct APIError: Error, Sendable {
    public var status: Int
    public var code: String
    public var detail: String
    /// Per-field messages for `validation_failed`.
    public var fields: [String: String] = [:]
    /// Extra members (e.g. `current` for 412, `retryAfter`).
    public var extra: JSONObject = JSONObject()
    public var headers: HTTPHeaders = HTTPHeaders()

    public init(_ status: Int, _ code: String, _ detail: String) {
        self.status = status
        self.code = code
        self.detail = detail
    }

    static func badRequest(_ d: String) -> APIError { APIError(400, "bad_request", d) }
    static func invalidJSON(_ d: String) -> APIError { APIError(400, "invalid_json", d) }
    static func notFound(_ d: String = "No such resource.") -> APIError { APIError(404, "not_found", d) }
    static func unauthenticated(_ d: String = "A valid bearer token is required.") -> APIError {
        var e = APIError(401, "unauthenticated", d)
        e.headers.set("WWW-Authenticate", "Bearer realm=\"kidledger\"")
        return e
    }
    /// Most field names a problem lists; the detail says how many more there are.
    static let listedFields = 5

    /// 422 `validation_failed` listing the first `listedFields` of `fields` (by name).
    /// `unlisted`: more invalid fields, found but not in `fields`.
    static func validation(_ fields: [String: String], unlisted: Int = 0) -> APIError {
        var names = fields.keys.sorted()
        let dropped = max(0, names.count - listedFields)
        if dropped > 0 { names.removeLast(dropped) }
        let more = dropped + unlisted
        var e = APIError(422, "validation_failed", "The request has invalid fields: "
                         + names.joined(separator: ", ") + (more > 0 ? ", and \(more) more." : "."))
        e.fields = dropped > 0 ? Dictionary(uniqueKeysWithValues: names.map { ($0, fields[$0]!) }) : fields
        return e
    }
    static func validation(_ field: String, _ message: String) -> APIError { validation([field: message]) }
    static let readOnly = APIError(403, "read_only", "Your access to this household is read-only.")
    static let accessRevoked = APIError(403, "access_revoked", "Your access to this household was revoked or you left it.")
    static let ownerOnly = APIError(403, "owner_only", "Only the household's owner may do this.")
    static func `internal`(_ d: String = "Something went wrong on the server.") -> APIError { APIError(500, "internal", d) }

    /// The problem+json response.
    public var response: HTTPResponse {
        var members = JSONObject()
        if !fields.isEmpty {
            members["fields"] = .object(JSONObject(uniquePairs: fields.keys.sorted().map { ($0, .string(fields[$0]!)) }))
        }
        for (k, v) in extra.pairs { members[k] = v }
        return Problem.make(status: status, code: code, detail: detail, members: members, headers: headers)
    }
}
