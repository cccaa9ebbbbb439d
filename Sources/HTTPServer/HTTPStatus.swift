/// Reason phrases and pre-encoded status lines.
public enum HTTPStatus {
    /// The reason phrase of `status` (RFC 9110), as the status line and a problem's `title`
    /// spell it; `Status <n>` for a status without one here.
    public static func reason(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 406: return "Not Acceptable"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 411: return "Length Required"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 417: return "Expectation Failed"
        case 422: return "Unprocessable Content"
        case 428: return "Precondition Required"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 507: return "Insufficient Storage"
        default: return "Status \(status)"
        }
    }

    private static let commonLines: [Int: [UInt8]] = {
        var d: [Int: [UInt8]] = [:]
        for s in [200, 201, 204, 304, 400, 401, 403, 404, 405, 408, 409, 410, 412, 413, 415, 422, 429, 431, 500, 503] {
            d[s] = Array("HTTP/1.1 \(s) \(reason(s))\r\n".utf8)
        }
        return d
    }()

    private static let ok: [UInt8] = Array("HTTP/1.1 200 OK\r\n".utf8)

    /// `HTTP/1.1 <status> <reason>\r\n` (prebuilt for the common statuses).
    static func statusLine(_ status: Int) -> [UInt8] {
        if status == 200 { return ok }
        if let line = commonLines[status] { return line }
        return Array("HTTP/1.1 \(status) \(reason(status))\r\n".utf8)
    }
}
