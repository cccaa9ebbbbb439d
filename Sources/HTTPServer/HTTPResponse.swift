/// A complete response. The server adds `Content-Length`, `Date`, `Server` and `Connection`,
/// and gzip-encodes the body when the request allows it and the body is large enough.
public struct HTTPResponse: Sendable {
    public var status: Int
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// A low-cardinality label for metrics and the access log, e.g. the route template
    /// `/v1/households/{id}`. Not sent on the wire.
    public var routeLabel: String?
    /// The client address to log when it differs from the peer (e.g. taken from
    /// `X-Forwarded-For` of a trusted proxy). Not sent on the wire.
    public var clientAddress: String?
    /// A number the application gives the route (its place in a table), handed to the
    /// access log with `routeLabel` so per-route bookkeeping can index a table instead of
    /// hashing the label. Not sent on the wire.
    public var routeIndex: Int?

    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: [UInt8] = [], routeLabel: String? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.routeLabel = routeLabel
    }

    /// A response with a UTF-8 text body and the given content type.
    public init(status: Int, contentType: String, body: String, routeLabel: String? = nil) {
        var headers = HTTPHeaders()
        headers.add("Content-Type", contentType)
        self.init(status: status, headers: headers, body: Array(body.utf8), routeLabel: routeLabel)
    }
}
