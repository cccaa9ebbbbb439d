import LedgerModel

/// `application/problem+json` (RFC 9457) answers: the one place their body is written, for
/// the server's own refusals (framing, timeouts, connection limits) and the application's.
public enum ProblemResponse {
    /// `{"type":"urn:kidledger:<code>","title":<reason phrase>,"status":…,"detail":…,"code":…}`
    /// followed by `members` (such as `fields` or `current`), with `headers` added.
    public static func make(status: Int, code: String, detail: String, members: JSONObject = JSONObject(),
                            headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var o: JSONObject = [
            "type": .string("urn:kidledger:\(code)"),
            "title": .string(HTTPStatus.reason(status)),
            "status": .int(Int64(status)),
            "detail": .string(detail),
            "code": .string(code),
        ]
        for (k, v) in members.pairs { o[k] = v }
        var h = headers
        h.set("Content-Type", "application/problem+json")
        return HTTPResponse(status: status, headers: h, body: JSONValue.object(o).serialized())
    }

    static func make(for error: HTTPParserError) -> HTTPResponse {
        switch error {
        case .badRequest(let detail): return make(status: 400, code: "bad_request", detail: detail)
        case .headTooLarge: return make(status: 431, code: "header_too_large", detail: error.detail)
        case .bodyTooLarge: return make(status: 413, code: "payload_too_large", detail: error.detail)
        }
    }

    static func requestTimeout() -> HTTPResponse {
        make(status: 408, code: "request_timeout", detail: "The request was not received in time.")
    }

    static func serviceUnavailable() -> HTTPResponse {
        make(status: 503, code: "service_unavailable", detail: "Too many connections.")
    }
}
