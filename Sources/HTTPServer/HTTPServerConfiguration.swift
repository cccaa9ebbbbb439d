import Glibc

/// Settings of an `HTTPServer`. All sizes in bytes, all times in seconds.
public struct HTTPServerConfiguration: Sendable {
    /// Address to bind: an IPv4 or IPv6 literal, or `localhost`. Default `127.0.0.1`.
    public var host: String = "127.0.0.1"
    /// Port to bind; 0 picks an ephemeral port (see `HTTPServer.port`). Default 8080.
    public var port: Int = 8080
    /// Number of epoll event-loop threads. 0 (the default): one per two cores, at least one,
    /// so the threads that work off the loops (a database writer, workers) keep cores of
    /// their own and each loop wakes for more ready connections at a time.
    public var eventLoops: Int = 0
    /// Largest request head (request line + headers); larger gets 431. Default 16 KiB.
    public var maxHeadBytes: Int = 16 * 1024
    /// Largest request body after decompression; larger gets 413. Default 4 MiB.
    public var maxBodyBytes: Int = 4 * 1024 * 1024
    /// Most memory held by request bodies being received, all connections together; a body
    /// that would take more is answered 503 with `Retry-After` (at its head when the budget
    /// is already spent, else when its buffer grows past it) and its connection closes.
    /// Default 256 MiB.
    public var maxBufferedBodyBytes: Int = 256 * 1024 * 1024
    /// Most open connections; more are answered 503 and closed. Default: the process's
    /// descriptor limit less a reserve (see `defaultMaxConnections(descriptorLimit:)`).
    public var maxConnections: Int = HTTPServerConfiguration.defaultMaxConnections(descriptorLimit: HTTPServerConfiguration.descriptorLimit)
    /// Most open connections from one client (an IPv4 address, or an IPv6 /64 network);
    /// more are answered 503 and closed at once. 0: no such limit. Default 256.
    public var maxConnectionsPerAddress: Int = 256
    /// Peers (textual addresses) that `maxConnectionsPerAddress` does not apply to, such
    /// as a trusted reverse proxy that carries many clients. Default: none.
    public var exemptFromAddressLimit: (@Sendable (String) -> Bool)?
    /// Time allowed to receive a complete request head once its first byte arrived (an
    /// empty line before the request line counts), then 408 and close. A new connection
    /// that sends nothing at all for this long is closed without an answer. Default 10.
    public var headerTimeout: Double = 10
    /// Time allowed to receive the whole body once the head is complete. Default 30.
    public var bodyTimeout: Double = 30
    /// Idle keep-alive connections (after a response) are closed after this long. Default 60.
    public var idleTimeout: Double = 60
    /// Responses with bodies at least this big are gzip-encoded when allowed. Default 1024.
    public var compressionThreshold: Int = 1024
    /// Graceful shutdown waits at most this long for in-flight requests. Default 10.
    public var shutdownDeadline: Double = 10
    /// Value of the `Server` header; an application names itself. Default `HTTPServer`.
    public var serverName: String = "HTTPServer"
    /// The start of the `type` of the problems (RFC 9457) the server answers by itself (400,
    /// 408, 413, 415, 431, 503): `type` is this prefix followed by the problem's `code`, as in
    /// `urn:problem:request_timeout`. An application sets its own, so that these problems
    /// have the same types as those its handlers answer. Default `urn:problem:`.
    public var problemTypePrefix: String = "urn:problem:"
    /// Called after each response is written (from an event-loop thread).
    public var accessLog: (@Sendable (AccessLogEntry) -> Void)?
    /// Called with the connections refused since the last call: at once for the first
    /// refusal, then at most once per `refusalReportInterval` while refusals go on (from an
    /// event-loop thread). Every refusal is in exactly one report.
    public var connectionsRefused: (@Sendable (ConnectionRefusalReport) -> Void)?
    /// Least time between two `connectionsRefused` calls. Default 10.
    public var refusalReportInterval: Double = 10

    public init() {}

    /// Descriptors kept out of `maxConnections`' default: for the database (the writer,
    /// its checkpointer and a read connection per worker thread, each with its WAL), the
    /// event loops, static files and logs. A tenth of the limit, at least 256.
    public static func descriptorReserve(descriptorLimit: Int) -> Int { max(256, descriptorLimit / 10) }

    /// `maxConnections`' default for a descriptor limit: the limit less
    /// `descriptorReserve`, at least 16 (a tiny limit still serves a few clients).
    public static func defaultMaxConnections(descriptorLimit: Int) -> Int {
        max(16, descriptorLimit - descriptorReserve(descriptorLimit: descriptorLimit))
    }

    /// The process's soft limit on open descriptors (`RLIMIT_NOFILE`); 1,048,576 when unlimited.
    public static var descriptorLimit: Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        return Int(min(limit.rlim_cur, 1 << 20))
    }

    /// Raises the soft descriptor limit to the hard limit (at most 1,048,576), as servers
    /// that hold many connections should; returns the soft limit in force afterwards.
    @discardableResult
    public static func raiseDescriptorLimit() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return descriptorLimit }
        let target = min(limit.rlim_max, 1 << 20)
        if limit.rlim_cur < target {
            limit.rlim_cur = target
            _ = setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        }
        return descriptorLimit
    }
}
