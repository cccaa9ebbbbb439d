/// Completes one request. Exactly one call to `respond` counts; later calls are ignored.
/// It may be called from any thread, at once or much later (group commit, long-poll);
/// if the connection closed meanwhile the response is dropped.
public protocol HTTPResponder: Sendable {
    /// The response is handed over (consumed): stored as it is, not copied (a copy retains
    /// every field).
    func respond(_ response: consuming HTTPResponse)
    /// True once the client connection has closed or the server is shutting down hard.
    var isClosed: Bool { get }
    /// Runs `work` on the thread that writes this connection's answers (its event loop),
    /// after what is already queued there: a thread that finished the slow part of a request
    /// hands over the rest (building a small answer), which then needs no further hop to
    /// reach the socket. Short work only: it holds up every connection of that loop.
    /// Responders without such a thread run `work` at once.
    func execute(_ work: @escaping @Sendable () -> Void)
}

extension HTTPResponder {
    public func execute(_ work: @escaping @Sendable () -> Void) { work() }
}

/// The application side of the server: called on an event-loop thread for each complete
/// request. It must not block: long work goes elsewhere and answers through `responder`.
public protocol HTTPHandler: Sendable {
    /// The request is handed over (consumed): a handler keeps it without a copy.
    func handle(_ request: consuming HTTPRequest, responder: any HTTPResponder)

    /// Called on the event loop when a request head announces a body, before any of the
    /// body is read: what the head decides (no such route, method, media type, missing
    /// credentials, the route's own size limit) is answered at once, and the body is never
    /// buffered. Short work only, like `handle`.
    func screen(_ head: HTTPRequestHead, remoteAddress: String) -> BodyAdmission
}

/// What to do with a request body, decided from its head.
public enum BodyAdmission: Sendable {
    /// Read the body, at most `limit` bytes after decompression (nil: the server's limit;
    /// a larger limit than the server's counts as the server's). A `Content-Length` over
    /// the limit is answered 413 at once, a chunked body as soon as it passes it.
    case read(limit: Int?)
    /// Answer at once without reading the body; the connection closes after the answer.
    case refuse(HTTPResponse)
    /// Decided off the event loop, for a head whose screening may block (a lookup in remote
    /// storage): the connection reads nothing further, and its loop serves the others,
    /// until `decide` hands its verdict (`.read` or `.refuse`) to the function it is given,
    /// once, from any thread. The body is still never read for a refusal.
    case later(_ decide: @Sendable (_ verdict: @escaping @Sendable (BodyAdmission) -> Void) -> Void)
}

extension HTTPHandler {
    public func screen(_ head: HTTPRequestHead, remoteAddress: String) -> BodyAdmission { .read(limit: nil) }
}

/// A handler made from a closure.
public struct ClosureHandler: HTTPHandler {
    private let body: @Sendable (HTTPRequest, any HTTPResponder) -> Void
    public init(_ body: @escaping @Sendable (HTTPRequest, any HTTPResponder) -> Void) { self.body = body }
    public func handle(_ request: consuming HTTPRequest, responder: any HTTPResponder) { body(request, responder) }
}

/// One line of the access log, reported after a response has been written.
public struct AccessLogEntry: Sendable {
    public var method: String
    /// The path without the query string (queries may carry secrets).
    public var path: String
    public var routeLabel: String?
    public var status: Int
    /// Body bytes written on the wire (after compression).
    public var bytes: Int
    /// Seconds from the complete request (handed to the handler) to its response fully
    /// handed to the socket.
    public var duration: Double
    public var remoteAddress: String
    /// The response's `routeIndex`.
    public var routeIndex: Int?

    public init(method: String, path: String, routeLabel: String?, status: Int, bytes: Int, duration: Double,
                remoteAddress: String, routeIndex: Int? = nil) {
        self.routeIndex = routeIndex
        self.method = method
        self.path = path
        self.routeLabel = routeLabel
        self.status = status
        self.bytes = bytes
        self.duration = duration
        self.remoteAddress = remoteAddress
    }
}
