/// The `application/problem+json` responses the server itself generates.
enum ProblemResponse {
    static func make(status: Int, code: String, detail: String) -> HTTPResponse {
        var body = "{\"type\":\"urn:kidledger:"
        body += code
        body += "\",\"title\":\""
        body += jsonEscaped(HTTPStatus.reason(status))
        body += "\",\"status\":"
        body += String(status)
        body += ",\"detail\":\""
        body += jsonEscaped(detail)
        body += "\",\"code\":\""
        body += code
        body += "\"}"
        return HTTPResponse(status: status, contentType: "application/problem+json", body: body)
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

    static func jsonEscaped(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for scalar in s.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        return out
    }
}
