/// Settings of an `HTTPServer`. All sizes in bytes, all times in seconds.
public struct HTTPServerConfiguration: Sendable {
    /// Address to bind: an IPv4 or IPv6 literal, or `localhost`. Default `127.0.0.1`.
    public var host: String = "127.0.0.1"
    /// Port to bind; 0 picks an ephemeral port (see `HTTPServer.port`). Default 8080.
    public var port: Int = 8080
    /// Number of epoll event-loop threads. Default: one per core.
    public var eventLoops: Int = 0
    /// Largest request head (request line + headers); larger gets 431. Default 16 KiB.
    public var maxHeadBytes: Int = 16 * 1024
    /// Largest request body after decompression; larger gets 413. Default 4 MiB.
    public var maxBodyBytes: Int = 4 * 1024 * 1024
    /// Most open connections; more are answered 503 and closed. Default 20,000.
    public var maxConnections: Int = 20_000
    /// Time allowed to receive a complete request head once its first byte arrived (an
    /// empty line before the request line counts), then 408 and close. Default 10.
    public var headerTimeout: Double = 10
    /// Time allowed to receive the whole body once the head is complete. Default 30.
    public var bodyTimeout: Double = 30
    /// Idle keep-alive connections are closed after this long. Default 60.
    public var idleTimeout: Double = 60
    /// Responses with bodies at least this big are gzip-encoded when allowed. Default 1024.
    public var compressionThreshold: Int = 1024
    /// Graceful shutdown waits at most this long for in-flight requests. Default 10.
    public var shutdownDeadline: Double = 10
    /// Value of the `Server` header. Default `kidledger`.
    public var serverName: String = "kidledger"
    /// Called after each response is written (from an event-loop thread).
    public var accessLog: (@Sendable (AccessLogEntry) -> Void)?

    public init() {}
}
