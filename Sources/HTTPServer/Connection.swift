/// The loop-confined state of one client connection.
final class Connection {
    /// Where the connection is in its life.
    enum Phase {
        /// Reading requests and writing responses.
        case open
        /// The last response is written; the write side is shut and input is discarded
        /// until the peer closes or the linger deadline passes.
        case lingering
    }

    /// One request awaiting (or holding) its response, in request order.
    struct Slot {
        var sequence: UInt64
        var method: String
        /// The request target's path (without the query), for the access log.
        var path: String
        var isHead: Bool
        var keepAlive: Bool
        var minorVersion: Int
        var acceptsGzip: Bool
        var startedAt: Double
        var response: HTTPResponse?
        /// Close after this response regardless of keep-alive (errors).
        var forceClose: Bool

        /// Whether the response is in (checked without copying it).
        var isAnswered: Bool {
            if case .some = response { return true }
            return false
        }
    }

    struct PendingLog {
        var endOffset: Int
        var entry: AccessLogEntry
    }

    // Every field below is read and written only on the connection's loop thread, in
    // straight-line code that never touches a field while a mutation of the same field is
    // under way: they skip the runtime's dynamic exclusivity check (a call per access,
    // dozens per request).
    let handle: ConnectionHandle
    let remoteAddress: String
    /// The client this connection is counted under for `maxConnectionsPerAddress`; nil
    /// when it is not counted (no limit, an exempt peer, or a refusal lingering).
    @exclusivity(unchecked) var peerKey: PeerKey?
    @exclusivity(unchecked) var phase: Phase = .open
    @exclusivity(unchecked) var parser: HTTPParser
    /// Unconsumed input (partial head or chunk line, or a pipelined backlog). Empty when idle.
    @exclusivity(unchecked) var inbound: [UInt8] = []
    @exclusivity(unchecked) var outbound: [UInt8] = []
    @exclusivity(unchecked) var outboundOffset = 0
    /// Total bytes ever queued / written, for access-log bookkeeping.
    @exclusivity(unchecked) var bytesQueued = 0
    @exclusivity(unchecked) var bytesWritten = 0
    @exclusivity(unchecked) var logs: [PendingLog] = []
    @exclusivity(unchecked) var slots: [Slot] = []
    @exclusivity(unchecked) var nextSequence: UInt64 = 0
    /// Bytes of the server's body budget this connection holds (its parser's body buffer).
    @exclusivity(unchecked) var bodyBytesHeld = 0
    /// The body limit of the request being received (the route's, or the server's).
    @exclusivity(unchecked) var bodyLimit = 0
    /// The head whose body is being received.
    @exclusivity(unchecked) var currentHead: HTTPRequestHead?
    /// No further requests are read (close requested, error, or shutdown).
    @exclusivity(unchecked) var stopReading = false
    /// Parsing stopped at the pipeline limit with input left in `inbound`.
    @exclusivity(unchecked) var backlogged = false
    /// The handler screens `currentHead` off the loop (`BodyAdmission.later`): nothing
    /// further is read or parsed until its verdict arrives.
    @exclusivity(unchecked) var awaitingAdmission = false
    /// The peer shut its write side: requests already received are still answered, then
    /// the connection closes.
    @exclusivity(unchecked) var peerClosed = false
    @exclusivity(unchecked) var closeAfterWrite = false
    /// True while the loop is parsing and dispatching this connection's input.
    @exclusivity(unchecked) var dispatching = false

    @exclusivity(unchecked) var headDeadline: Double?
    @exclusivity(unchecked) var bodyDeadline: Double?
    @exclusivity(unchecked) var idleDeadline: Double?
    @exclusivity(unchecked) var writeDeadline: Double?
    @exclusivity(unchecked) var lingerDeadline: Double?
    /// The deadline in force, and the earliest one queued in the loop's timer heap.
    @exclusivity(unchecked) var deadline: Double?
    @exclusivity(unchecked) var scheduled: Double?
    @exclusivity(unchecked) var interest: EventInterest = [.read]

    init(handle: ConnectionHandle, remoteAddress: String, parser: HTTPParser) {
        self.handle = handle
        self.remoteAddress = remoteAddress
        self.parser = parser
    }

    var fd: Int32 { handle.fd }
    var hasUnsentOutput: Bool { outboundOffset < outbound.count }
    var isIdle: Bool {
        slots.isEmpty && currentHead == nil && inbound.isEmpty && parser.isIdle && !hasUnsentOutput
    }
}
