import HTTPServer
import LedgerCore
import LedgerModel

/// The API's `application/problem+json` answers (RFC 9457): the one place their body is
/// written for the application's errors. The HTTP layer writes its own refusals in the same
/// format, with the same type prefix (`LedgerApp` configures it; `ProblemBodyTests` compares).
enum Problem {
    /// The start of every problem's `type`: `urn:kidledger:<code>`, as `openapi.yaml` says.
    static let typePrefix = "urn:kidledger:"

    /// `{"type":"urn:kidledger:<code>","title":<reason phrase>,"status":…,"detail":…,"code":…}`
    /// followed by `members` (such as `fields` or `current`), with `headers` added.
    static func make(status: Int, code: String, detail: String, members: JSONObject = JSONObject(),
                     headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var o: JSONObject = [
            "type": .string(typePrefix + code),
            "title": .string(HTTPStatus.reason(status)),
            "status": .int(Int64(status)),
            "detail": .string(detail),
            "code": .string(code),
        ]
        for (k, v) in members.pairs { o[k] = v }
        var h = headers
        h.set("Content-Type", ProblemResponse.contentType)
        return HTTPResponse(status: status, headers: h, body: JSONValue.object(o).serialized())
    }
}
