import Synchronization

/// State shared by all event loops of one server.
final class ServerCore: Sendable {
    let configuration: HTTPServerConfiguration
    let handler: any HTTPHandler
    let serverName: [UInt8]
    let openConnections = Atomic<Int>(0)
    let shuttingDown = Atomic<Bool>(false)
    let hardStopped = Atomic<Bool>(false)
    /// Round-robin cursor for distributing accepted connections.
    let nextLoop = Atomic<Int>(0)
    /// Bytes held by request bodies being received, all loops together
    /// (`HTTPServerConfiguration.maxBufferedBodyBytes`).
    let bufferedBodyBytes = Atomic<Int>(0)
    /// Connections per client, and refusals.
    let admission: ConnectionAdmission

    init(configuration: HTTPServerConfiguration, handler: any HTTPHandler) {
        self.configuration = configuration
        self.handler = handler
        self.serverName = Array(configuration.serverName.utf8.filter { $0 >= 32 && $0 != 127 })
        self.admission = ConnectionAdmission(perAddressLimit: configuration.maxConnectionsPerAddress,
                                             reportInterval: configuration.refusalReportInterval,
                                             report: configuration.connectionsRefused, now: EventLoop.monotonicNow())
    }

    var isShuttingDown: Bool { shuttingDown.load(ordering: .relaxed) }
}
