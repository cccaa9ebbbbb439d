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

    let handle: ConnectionHandle
    let remoteAddress: String
    /// The client this connection is counted under for `maxConnectionsPerAddress`; nil
    /// when it is not counted (no limit, an exempt peer, or a refusal lingering).
    var peerKey: PeerKey?
    var phase: Phase = .open
    var parser: HTTPParser
    /// Unconsumed input (partial head or chunk line, or a pipelined backlog). Empty when idle.
    var inbound: [UInt8] = []
    var outbound: [UInt8] = []
    var outboundOffset = 0
    /// Total bytes ever queued / written, for access-log bookkeeping.
    var bytesQueued = 0
    var bytesWritten = 0
    var logs: [PendingLog] = []
    var slots: [Slot] = []
    var nextSequence: UInt64 = 0
    /// The head whose body is being received.
    var currentHead: HTTPRequestHead?
    /// No further requests are read (close requested, error, or shutdown).
    var stopReading = false
    /// Parsing stopped at the pipeline limit with input left in `inbound`.
    var backlogged = false
    /// The peer shut its write side: requests already received are still answered, then
    /// the connection closes.
    var peerClosed = false
    var closeAfterWrite = false
    /// True while the loop is parsing and dispatching this connection's input.
    var dispatching = false

    var headDeadline: Double?
    var bodyDeadline: Double?
    var idleDeadline: Double?
    var writeDeadline: Double?
    var lingerDeadline: Double?
    /// The deadline in force, and the earliest one queued in the loop's timer heap.
    var deadline: Double?
    var scheduled: Double?
    var interest: EventInterest = [.read]

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
