import Glibc
import Synchronization
import SystemKit

/// An HTTP/1.1 server on POSIX sockets and epoll.
///
/// `start()` binds and spawns `configuration.eventLoops` event-loop threads (0: one per
/// two cores, at least one). Each accepted connection belongs to one loop; the handler is called on that
/// loop's thread and may answer from any thread later. `shutdown()` drains gracefully.
public final class HTTPServer: Sendable {
    private struct State: Sendable {
        var loops: [EventLoop] = []
        var threads: [pthread_t] = []
        var listenFD: Int32 = -1
        var port = 0
        var started = false
        var stopped = false
    }

    let core: ServerCore
    private let state = Mutex<State>(State())

    /// - Parameters:
    ///   - configuration: limits, timeouts and the bind address (see `HTTPServerConfiguration`).
    ///   - handler: called on an event-loop thread for each complete request.
    public init(configuration: HTTPServerConfiguration, handler: any HTTPHandler) {
        self.core = ServerCore(configuration: configuration, handler: handler)
    }

    /// Binds the listening socket (`SO_REUSEADDR`; an IPv4 or IPv6 literal, or `localhost`),
    /// starts the event-loop threads and returns once the server accepts connections.
    /// Calling it again is a no-op. Throws when the address cannot be bound.
    public func start() throws {
        let config = core.configuration
        try state.withLock { s in
            guard !s.started else { return }
            let (fd, port) = try Socket.listen(host: config.host, port: config.port)
            let count = config.eventLoops > 0 ? config.eventLoops : max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))) / 2)
            var loops: [EventLoop] = []
            do {
                for i in 0..<count { loops.append(try EventLoop(index: i, core: core, listenFD: fd)) }
            } catch {
                close(fd)
                throw error
            }
            for loop in loops { loop.peers = loops }
            var threads: [pthread_t] = []
            for loop in loops {
                let box = Unmanaged.passRetained(ThreadBody {
                    nameCurrentThread("kl-loop-\(loop.index)")
                    loop.run()
                })
                var tid = pthread_t()
                let rc = pthread_create(&tid, nil, { arg in
                    let body = Unmanaged<ThreadBody>.fromOpaque(arg!).takeRetainedValue()
                    body.run()
                    return nil
                }, box.toOpaque())
                if rc != 0 {
                    box.release()
                    throw Socket.Failure(operation: "pthread_create", errno: rc)
                }
                threads.append(tid)
            }
            s.loops = loops
            s.threads = threads
            s.listenFD = fd
            s.port = port
            s.started = true
        }
    }

    /// The bound port (the ephemeral one when `configuration.port` is 0); 0 before `start()`.
    public var port: Int { state.withLock { $0.port } }

    /// Connections currently open, across all event loops.
    public var openConnections: Int { core.openConnections.load(ordering: .acquiring) }

    /// Connections refused since the server was created, by reason.
    public var refusedConnections: [ConnectionRefusalReason: Int] { core.admission.totals }

    /// Graceful stop: refuses new connections, closes idle ones, lets requests already
    /// received finish (their responses carry `Connection: close`), and returns when every
    /// connection closed or `configuration.shutdownDeadline` seconds passed; then closes the
    /// rest and joins the event-loop threads. Safe to call more than once.
    /// `beforeDraining` runs once the server refuses new connections and marks every
    /// further response `Connection: close`, and before it waits for in-flight requests:
    /// the place to answer requests parked by the application (long-polls).
    public func shutdown(beforeDraining: () -> Void = {}) {
        let taken = state.withLock { s -> ([EventLoop], [pthread_t], Int32)? in
            guard s.started, !s.stopped else { return nil }
            s.stopped = true
            return (s.loops, s.threads, s.listenFD)
        }
        guard let (loops, threads, fd) = taken else { return }
        core.shuttingDown.store(true, ordering: .releasing)
        Glibc.shutdown(fd, Int32(SHUT_RDWR))
        for loop in loops { loop.enqueue(.shutdown) }
        beforeDraining()
        let deadline = EventLoop.monotonicNow() + core.configuration.shutdownDeadline
        while core.openConnections.load(ordering: .acquiring) > 0 && EventLoop.monotonicNow() < deadline {
            usleep(2_000)
        }
        core.hardStopped.store(true, ordering: .releasing)
        for loop in loops { loop.enqueue(.stop) }
        for tid in threads { pthread_join(tid, nil) }
        close(fd)
        core.admission.flush(now: EventLoop.monotonicNow(), final: true)
        state.withLock { $0.loops = [] }
    }
}

private final class ThreadBody {
    let run: () -> Void
    init(_ run: @escaping () -> Void) { self.run = run }
}
