import Glibc
import Synchronization

/// One epoll event-loop thread: accepts, reads, parses, dispatches and writes for the
/// connections it owns. Everything but `inbox`, `wakeFD` and `threadID` is confined to the
/// loop thread; other threads talk to it only through `enqueue(_:)`.
final class EventLoop: @unchecked Sendable {
    enum Task {
        case adopt(fd: Int32, address: String, key: PeerKey?)
        case response(HTTPResponse, ConnectionHandle, UInt64)
        /// Work handed to the loop by another thread (see `HTTPResponder.execute`).
        case run(@Sendable () -> Void)
        case shutdown
        case stop
    }

    let index: Int
    let core: ServerCore
    let listenFD: Int32
    /// Every loop of the server, for distributing accepted connections (set before `run`).
    var peers: [EventLoop] = []

    private let queue: EpollQueue
    private let wakeFD: Int32
    /// Tasks from other threads (answers from request threads, many on PostgreSQL), guarded
    /// by `inboxLock`: a plain pthread mutex, not `Mutex`, which on Linux spins and then
    /// hands itself to the next waiter in the kernel (with more request threads than cores,
    /// the others queue behind a waiter not yet running).
    private let inboxLock: UnsafeMutablePointer<pthread_mutex_t> = {
        let m = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
        pthread_mutex_init(m, nil)
        return m
    }()
    @exclusivity(unchecked) nonisolated(unsafe) private var inbox: [Task] = []
    /// The tasks being run, swapped with `inbox` by each drain and emptied keeping their
    /// storage (loop thread only): the two arrays take turns, so a burst of answers from
    /// the writer grows neither again. Emptied without keeping, `inbox` grew from nothing
    /// after every drain, and a group commit's answers (over 1 KiB of tasks) took and gave
    /// back memory the C library's per-thread cache does not keep.
    @exclusivity(unchecked) nonisolated(unsafe) private var draining: [Task] = []
    /// Largest storage the two arrays keep between drains, in tasks.
    private static let keptInboxCapacity = 1024
    private let threadID = Atomic<UInt>(0)
    /// Whether `inbox` holds tasks (written under `inboxLock`, read without it by the loop).
    private let hasTasks = Atomic<Bool>(false)
    /// Whether the loop is about to wait, or waiting, in `epoll_wait`: only then does a task
    /// from another thread write `wakeFD`. A loop that is awake drains the inbox before it
    /// waits again, so a burst of answers while it works costs no write, no wake-up and no
    /// read. (`hasTasks` and this flag are a Dekker pair: the thread that enqueues sets the
    /// first and then reads this; the loop sets this and then reads the first, both
    /// sequentially consistent, so at least one of them sees the other's store.)
    private let sleeping = Atomic<Bool>(false)

    // Loop-thread state, touched on every request: no dynamic exclusivity check (see
    // Connection's fields).
    @exclusivity(unchecked) var connections: [Connection?] = []
    @exclusivity(unchecked) var timers = TimerHeap()
    @exclusivity(unchecked) var now: Double = 0
    @exclusivity(unchecked) var date: HTTPDateCache
    private var running = true
    private let accept4Fn: LinuxEpoll.Accept4Fn
    private var listening = true
    /// While set, the listening socket is not watched (descriptors ran out) until this time.
    private var acceptPausedUntil: Double?
    /// A descriptor (`/dev/null`) given up when the process runs out of descriptors, so
    /// waiting connections can still be accepted and refused; -1 while it is not held.
    private var reserveFD: Int32 = -1
    /// The refusal for connections the server does not serve, and the `Date` it carries.
    private var busy: (date: [UInt8], bytes: [UInt8]) = ([], [])
    private var nextID: UInt64 = 0
    let readBufferSize = 64 * 1024
    let readBuffer: UnsafeMutablePointer<UInt8>
    let maxPipeline = 16
    let maxBufferedOutput = 1 << 20
    /// How long accepting pauses after the process ran out of descriptors, in seconds.
    let acceptPause = 0.1
    /// Most connections accepted and refused with the reserve descriptor in one go.
    let maxRefusedWithReserve = 64

    init(index: Int, core: ServerCore, listenFD: Int32) throws {
        guard let queue = EpollQueue(), let fns = LinuxEpoll.functions else {
            throw Socket.Failure(operation: "epoll_create1", errno: errno)
        }
        let wake = fns.eventfd(0, LinuxEpoll.EFD_NONBLOCK | LinuxEpoll.EFD_CLOEXEC)
        guard wake >= 0 else { throw Socket.Failure(operation: "eventfd", errno: errno) }
        self.index = index
        self.core = core
        self.listenFD = listenFD
        self.queue = queue
        self.wakeFD = wake
        self.readBuffer = .allocate(capacity: readBufferSize)
        self.date = HTTPDateCache(serverName: core.serverName)
        self.accept4Fn = fns.accept4
        self.reserveFD = Self.openReserve()
        // Edge-triggered: every write is one event, and the loop never reads the counter
        // (one system call less per wake-up; `enqueue` resets it in the unlikely case it fills).
        _ = self.queue.add(wake, interest: [.read, .edge])
        _ = self.queue.add(listenFD, interest: [.read, .exclusive])
    }

    deinit {
        pthread_mutex_destroy(inboxLock)
        inboxLock.deallocate()
        readBuffer.deallocate()
        close(wakeFD)
        if reserveFD >= 0 { close(reserveFD) }
    }

    private static func openReserve() -> Int32 { open("/dev/null", O_RDONLY | O_CLOEXEC) }

    static func monotonicNow() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }

    var isOnLoopThread: Bool { threadID.load(ordering: .relaxed) == UInt(pthread_self()) }

    // MARK: - Cross-thread entry points

    func enqueue(_ task: Task) {
        pthread_mutex_lock(inboxLock)
        inbox.append(task)
        let wasEmpty = inbox.count == 1
        if wasEmpty { hasTasks.store(true, ordering: .sequentiallyConsistent) }
        pthread_mutex_unlock(inboxLock)
        // A loop that is awake sees `hasTasks` before it waits; one that waits is woken.
        if wasEmpty && sleeping.load(ordering: .sequentiallyConsistent) { wake() }
    }

    private func wake() {
        var one: UInt64 = 1
        while write(wakeFD, &one, 8) < 0 {
            if errno == EINTR { continue }
            guard errno == EAGAIN else { return }
            // The counter is full (2^64 - 2 writes never read): empty it and write again.
            var value: UInt64 = 0
            _ = read(wakeFD, &value, 8)
        }
    }

    /// Called by responders from any thread.
    func deliver(_ response: consuming HTTPResponse, to handle: ConnectionHandle, sequence: UInt64) {
        if isOnLoopThread {
            complete(consume response, handle: handle, sequence: sequence)
        } else {
            enqueue(.response(consume response, handle, sequence))
        }
    }

    /// Runs `work` on the loop thread: at once when called there, otherwise after the tasks
    /// already queued.
    func execute(_ work: @escaping @Sendable () -> Void) {
        if isOnLoopThread { work() } else { enqueue(.run(work)) }
    }

    // MARK: - The loop

    func run() {
        threadID.store(UInt(pthread_self()), ordering: .relaxed)
        now = Self.monotonicNow()
        date.refresh()
        while running {
            var timeout: Int32 = 1000
            var next = timers.first?.deadline
            if let resume = acceptPausedUntil { next = min(next ?? resume, resume) }
            if let next {
                let ms = (next - now) * 1000
                timeout = ms <= 0 ? 0 : Int32(min(1000, ms.rounded(.up)))
            }
            if timeout != 0 {
                sleeping.store(true, ordering: .sequentiallyConsistent)
                if hasTasks.load(ordering: .sequentiallyConsistent) { timeout = 0 }
            }
            queue.wait(timeoutMilliseconds: timeout) { event in
                self.now = Self.monotonicNow()
                self.handle(event)
            }
            sleeping.store(false, ordering: .relaxed)
            if hasTasks.load(ordering: .relaxed) { drainInbox() }
            now = Self.monotonicNow()
            date.refresh()
            fireTimers()
            resumeAccepting()
            core.admission.flush(now: now)
        }
        for case let c? in connections { closeConnection(c) }
        connections = []
    }

    private func handle(_ event: ReadyEvent) {
        if event.fd == wakeFD {
            drainInbox()
        } else if event.fd == listenFD {
            acceptBurst()
        } else if let c = connection(event.fd) {
            if event.writable { pump(c) }
            if c.handle.closed.load(ordering: .relaxed) || c.phase == .lingering && !event.readable { return }
            if event.failed && c.peerClosed {
                // Reset after a half-close: nothing can be delivered any more.
                closeConnection(c)
                return
            }
            if event.readable || event.failed { readable(c) }
        }
    }

    @inline(__always)
    func connection(_ fd: Int32) -> Connection? {
        let i = Int(fd)
        return i >= 0 && i < connections.count ? connections[i] : nil
    }

    private func drainInbox() {
        pthread_mutex_lock(inboxLock)
        swap(&inbox, &draining)
        hasTasks.store(false, ordering: .relaxed)
        pthread_mutex_unlock(inboxLock)
        defer {
            if draining.capacity > Self.keptInboxCapacity { draining = [] } else { draining.removeAll(keepingCapacity: true) }
        }
        for task in draining {
            switch task {
            case .adopt(let fd, let address, let key):
                adopt(fd: fd, address: address, key: key)
            case .response(let response, let handle, let sequence):
                complete(response, handle: handle, sequence: sequence)
            case .run(let work):
                work()
            case .shutdown:
                beginShutdown()
            case .stop:
                running = false
            }
        }
    }

    // MARK: - Accepting

    /// The 503 for connections the server does not serve, with the current `Date`.
    private func busyResponse() -> [UInt8] {
        if busy.date != date.bytes {
            var out: [UInt8] = []
            var refusal = ProblemResponse.serviceUnavailable(typePrefix: problemTypePrefix)
            refusal.headers.set("Retry-After", "1")
            _ = ResponseEncoder.encode(refusal,
                                       options: .init(isHead: false, close: true, announceKeepAlive: false,
                                                      acceptsGzip: false, compressionThreshold: .max),
                                       fixedFields: date.fields, into: &out)
            busy = (date.bytes, out)
        }
        return busy.bytes
    }

    private func acceptBurst() {
        guard listening, acceptPausedUntil == nil else { return }
        for _ in 0..<1024 {
            var storage = sockaddr_storage()
            var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept4Fn(listenFD, $0, &len, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
                }
            }
            if fd < 0 {
                let e = errno
                if e == EINTR || e == ECONNABORTED { continue }
                if e == EMFILE || e == ENFILE {
                    refuseWithReserve()
                    pauseAccepting()
                } else if e == EINVAL || e == EBADF {
                    // The listening socket was shut down.
                    queue.remove(listenFD)
                    listening = false
                }
                return
            }
            let address = Socket.addressString(storage)
            if core.isShuttingDown {
                refuse(fd, linger: false, reason: .shuttingDown, address: address)
                continue
            }
            let open = core.openConnections.load(ordering: .relaxed), limit = core.configuration.maxConnections
            if open >= limit {
                // Refusals linger too, but at most as many as the limit (64 or more).
                refuse(fd, linger: open - limit < max(limit, 64), reason: .maxConnections, address: address)
                continue
            }
            var key: PeerKey? = nil
            if core.admission.perAddressLimit > 0, core.configuration.exemptFromAddressLimit?(address) != true {
                key = PeerKey(storage)
                if let key, !core.admission.admit(key) {
                    // No lingering: a client over its own limit must not hold descriptors
                    // or connection slots that other clients need.
                    refuse(fd, linger: false, reason: .perAddress, address: address)
                    continue
                }
            }
            core.openConnections.add(1, ordering: .relaxed)
            Socket.setNoDelay(fd)
            let target = peers.isEmpty ? self : peers[core.nextLoop.add(1, ordering: .relaxed).oldValue % peers.count]
            if target === self {
                adopt(fd: fd, address: address, key: key)
            } else {
                target.enqueue(.adopt(fd: fd, address: address, key: key))
            }
        }
    }

    /// Out of descriptors: gives up the reserve to accept waiting connections and refuse
    /// them with 503, then takes the reserve back.
    private func refuseWithReserve() {
        guard reserveFD >= 0 else { return }
        close(reserveFD)
        for _ in 0..<maxRefusedWithReserve {
            let fd = accept4Fn(listenFD, nil, nil, Int32(SOCK_NONBLOCK.rawValue | SOCK_CLOEXEC.rawValue))
            if fd < 0 {
                if errno == EINTR || errno == ECONNABORTED { continue }
                break
            }
            refuse(fd, linger: false, reason: .outOfDescriptors, address: nil)
        }
        reserveFD = Self.openReserve()
    }

    /// Stops watching the listening socket for `acceptPause` seconds, so a listener that
    /// stays readable cannot spin the loop.
    private func pauseAccepting() {
        queue.remove(listenFD)
        acceptPausedUntil = now + acceptPause
    }

    private func resumeAccepting() {
        guard let until = acceptPausedUntil, until <= now else { return }
        acceptPausedUntil = nil
        if reserveFD < 0 { reserveFD = Self.openReserve() }
        if listening { _ = queue.add(listenFD, interest: [.read, .exclusive]) }
    }

    /// Answers a connection the server does not serve with 503 and shuts its write side.
    /// With `linger` it stays a moment, discarding input, so the client reads the answer
    /// instead of a reset; without, input already received is drained (at most 64 KiB)
    /// and the socket is closed at once. Counted (and reported) under `reason`.
    private func refuse(_ fd: Int32, linger: Bool, reason: ConnectionRefusalReason, address: String?) {
        core.admission.refused(reason, address: address, now: now)
        busyResponse().withUnsafeBytes { p in _ = send(fd, p.baseAddress, p.count, Int32(MSG_NOSIGNAL | MSG_DONTWAIT)) }
        shutdown(fd, Int32(SHUT_WR))
        if linger {
            nextID &+= 1
            let handle = ConnectionHandle(id: UInt64(index) << 56 | nextID, fd: fd)
            let c = Connection(handle: handle, remoteAddress: "", parser: HTTPParser(maxHeadBytes: 0, maxBodyBytes: 0))
            c.phase = .lingering
            c.lingerDeadline = now + lingerTime
            core.openConnections.add(1, ordering: .relaxed)
            if register(c) { return }
            core.openConnections.subtract(1, ordering: .relaxed)
        }
        _ = recv(fd, readBuffer, readBufferSize, Int32(MSG_DONTWAIT))
        close(fd)
    }

    private func adopt(fd: Int32, address: String, key: PeerKey?) {
        if core.isShuttingDown && !running {
            close(fd)
            core.openConnections.subtract(1, ordering: .relaxed)
            if let key { core.admission.release(key) }
            return
        }
        nextID &+= 1
        let handle = ConnectionHandle(id: UInt64(index) << 56 | nextID, fd: fd)
        let parser = HTTPParser(maxHeadBytes: core.configuration.maxHeadBytes, maxBodyBytes: core.configuration.maxBodyBytes)
        let c = Connection(handle: handle, remoteAddress: address, parser: parser)
        c.peerKey = key
        if !register(c) {
            close(fd)
            core.openConnections.subtract(1, ordering: .relaxed)
            if let key { core.admission.release(key) }
        }
    }

    /// Adds an accepted connection to the table and the event queue (read interest) and
    /// arms its deadline; false when epoll refused it.
    private func register(_ c: Connection) -> Bool {
        let i = Int(c.fd)
        if i >= connections.count {
            connections.append(contentsOf: repeatElement(nil, count: max(i + 1 - connections.count, connections.count)))
        }
        connections[i] = c
        guard queue.add(c.fd, interest: [.read]) else {
            connections[i] = nil
            return false
        }
        updateDeadline(c)
        return true
    }

    /// How long a connection lingers after its last response: the header timeout, kept
    /// within 0.2…1 s.
    var lingerTime: Double { min(1, max(0.2, core.configuration.headerTimeout)) }

    // MARK: - Interest and closing

    func updateInterest(_ c: Connection) {
        var wanted: EventInterest = []
        switch c.phase {
        case .lingering:
            wanted.insert(.read)
        case .open:
            if !c.stopReading && !c.backlogged && !c.awaitingAdmission && !c.peerClosed && c.slots.count < maxPipeline
                && c.outbound.count - c.outboundOffset < maxBufferedOutput {
                wanted.insert(.read)
            }
            if c.hasUnsentOutput { wanted.insert(.write) }
        }
        if wanted != c.interest {
            c.interest = wanted
            queue.modify(c.fd, interest: wanted)
        }
    }

    func closeConnection(_ c: Connection) {
        guard !c.handle.closed.load(ordering: .relaxed) else { return }
        c.handle.closed.store(true, ordering: .releasing)
        queue.remove(c.fd)
        close(c.fd)
        if Int(c.fd) < connections.count, connections[Int(c.fd)] === c { connections[Int(c.fd)] = nil }
        c.slots.removeAll()
        c.inbound = []
        c.outbound = []
        if let key = c.peerKey { core.admission.release(key) }
        if c.bodyBytesHeld != 0 {
            core.bufferedBodyBytes.subtract(c.bodyBytesHeld, ordering: .relaxed)
            c.bodyBytesHeld = 0
        }
        core.openConnections.subtract(1, ordering: .releasing)
    }

    // MARK: - Shutdown

    private func beginShutdown() {
        if listening {
            queue.remove(listenFD)
            listening = false
        }
        acceptPausedUntil = nil
        for case let c? in connections {
            if c.currentHead == nil && c.slots.isEmpty && !c.hasUnsentOutput {
                closeConnection(c)
            } else {
                pump(c)
            }
        }
    }

    // MARK: - Timers

    func updateDeadline(_ c: Connection) {
        var d: Double? = nil
        let config = core.configuration
        switch c.phase {
        case .lingering:
            d = c.lingerDeadline
        case .open:
            if c.hasUnsentOutput {
                if c.writeDeadline == nil { c.writeDeadline = now + config.idleTimeout }
                d = c.writeDeadline
            } else if c.currentHead != nil {
                d = c.bodyDeadline
            } else if c.stopReading {
                d = nil
            } else if c.parser.isReadingHead && (!c.parser.isIdle || !c.inbound.isEmpty) && !c.backlogged {
                if c.headDeadline == nil { c.headDeadline = now + config.headerTimeout }
                d = c.headDeadline
            } else if c.slots.isEmpty {
                // A connection that has not sent a request yet gets the header timeout: an
                // idle one costs a descriptor and a connection slot, and a client that
                // means to send something does so at once.
                if c.idleDeadline == nil {
                    c.idleDeadline = now + (c.nextSequence == 0 ? config.headerTimeout : config.idleTimeout)
                }
                d = c.idleDeadline
            }
        }
        c.deadline = d
        if let d, c.scheduled == nil || d < c.scheduled! {
            timers.push(.init(deadline: d, fd: c.fd, connectionID: c.handle.id))
            c.scheduled = d
        }
    }

    private func fireTimers() {
        while let top = timers.first, top.deadline <= now {
            _ = timers.pop()
            guard let c = connection(top.fd), c.handle.id == top.connectionID, c.scheduled == top.deadline else { continue }
            c.scheduled = nil
            guard let d = c.deadline else { continue }
            if d > now {
                timers.push(.init(deadline: d, fd: c.fd, connectionID: c.handle.id))
                c.scheduled = d
                continue
            }
            timedOut(c)
        }
    }

    private func timedOut(_ c: Connection) {
        switch c.phase {
        case .lingering:
            closeConnection(c)
        case .open:
            if c.hasUnsentOutput || c.isIdle || c.stopReading {
                closeConnection(c)
            } else {
                // Head or body not received in time.
                c.currentHead = nil
                c.inbound = []
                c.headDeadline = nil
                c.bodyDeadline = nil
                enqueueError(c, ProblemResponse.requestTimeout(typePrefix: problemTypePrefix))
                pump(c)
            }
        }
    }
}
