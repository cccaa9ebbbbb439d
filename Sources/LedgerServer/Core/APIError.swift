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

    static func title(for status: Int) -> String {
        switch status {
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 422: return "Unprocessable Content"
        case 429: return "Too Many Requests"
        case 503: return "Service Unavailable"
        default: return status >= 500 ? "Internal Server Error" : "Error"
        }
    }

    /// The problem+json response.
    public var response: HTTPResponse {
        var o: JSONObject = [
            "type": .string("urn:kidledger:\(code)"),
            "title": .string(APIError.title(for: status)),
            "status": .int(Int64(status)),
            "detail": .string(detail),
            "code": .string(code),
        ]
        if !fields.isEmpty {
            var f = JSONObject()
            for k in fields.keys.sorted() { f[k] = .string(fields[k]!) }
            o["fields"] = .object(f)
        }
        for (k, v) in extra.pairs { o[k] = v }
        var h = headers
        h.set("Content-Type", "application/problem+json")
        return HTTPResponse(status: status, headers: h, body: JSONValue.object(o).serialized())
    }
}
