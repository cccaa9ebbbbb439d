import ByteWriting

/// `application/problem+json` (RFC 9457) answers for the server's own refusals (framing,
/// timeouts, connection and body limits). The `type` is a configured prefix followed by the
/// code (`HTTPServerConfiguration.problemTypePrefix`), so an application can give them the
/// same types as its own problems.
public enum ProblemResponse {
    /// `application/problem+json`.
    public static let contentType = "application/problem+json"

    /// `{"type":"<typePrefix><code>","title":<reason phrase>,"status":…,"detail":…,"code":…}`
    /// with `headers` added.
    public static func make(status: Int, code: String, detail: String, typePrefix: String,
                            headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        let type = typePrefix + code
        let title = HTTPStatus.reason(status)
        // The member names and punctuation (46 bytes), the status's digits (at most 20), the values.
        let bound = 46 + 20 + ByteWriter.jsonStringBound(type) + ByteWriter.jsonStringBound(title)
            + ByteWriter.jsonStringBound(detail) + ByteWriter.jsonStringBound(code)
        let body = [UInt8](writing: bound) { w in
            w.put(literal: #"{"type":"#)
            w.putJSONString(type)
            w.put(literal: #","title":"#)
            w.putJSONString(title)
            w.put(literal: #","status":"#)
            w.putDecimal(Int64(status))
            w.put(literal: #","detail":"#)
            w.putJSONString(detail)
            w.put(literal: #","code":"#)
            w.putJSONString(code)
            w.put(literal: "}")
        }
        var h = headers
        h.set("Content-Type", contentType)
        return HTTPResponse(status: status, headers: h, body: body)
    }

    static func make(for error: HTTPParserError, typePrefix: String) -> HTTPResponse {
        switch error {
        case .badRequest(let detail):
            return make(status: 400, code: "bad_request", detail: detail, typePrefix: typePrefix)
        case .headTooLarge:
            return make(status: 431, code: "header_too_large", detail: error.detail, typePrefix: typePrefix)
        case .bodyTooLarge:
            return make(status: 413, code: "payload_too_large", detail: error.detail, typePrefix: typePrefix)
        }
    }

    static func requestTimeout(typePrefix: String) -> HTTPResponse {
        make(status: 408, code: "request_timeout", detail: "The request was not received in time.", typePrefix: typePrefix)
    }

    static func serviceUnavailable(typePrefix: String) -> HTTPResponse {
        make(status: 503, code: "service_unavailable", detail: "Too many connections.", typePrefix: typePrefix)
    }
}
