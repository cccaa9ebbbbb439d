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
    static func validation(_ fields: [String: String]) -> APIError {
        var e = APIError(422, "validation_failed", "The request has invalid fields: "
                         + fields.keys.sorted().joined(separator: ", ") + ".")
        e.fields = fields
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
            var f = JSONObject()
            for k in fields.keys.sorted() { f[k] = .string(fields[k]!) }
            members["fields"] = .object(f)
        }
        for (k, v) in extra.pairs { members[k] = v }
        return ProblemResponse.make(status: status, code: code, detail: detail, members: members, headers: headers)
    }
}
