import Glibc

/// `EventQueue` on Linux epoll, level-triggered.
struct EpollQueue: EventQueue, ~Copyable {
    let epfd: Int32
    private let fns: LinuxEpoll.Functions
    private let events: UnsafeMutableRawPointer
    private let capacity: Int32

    init?(capacity: Int32 = 256) {
        guard let fns = LinuxEpoll.functions else { return nil }
        let fd = fns.create(LinuxEpoll.CLOEXEC)
        guard fd >= 0 else { return nil }
        self.fns = fns
        self.epfd = fd
        self.capacity = capacity
        self.events = .allocate(byteCount: Int(capacity) * LinuxEpoll.eventSize, alignment: 8)
    }

    deinit {
        events.deallocate()
        close(epfd)
    }

    private func mask(_ interest: EventInterest) -> UInt32 {
        var m: UInt32 = 0
        if interest.contains(.read) { m |= LinuxEpoll.IN }
        // EPOLLEXCLUSIVE may not be combined with EPOLLRDHUP.
        if interest.contains(.read) && !interest.contains(.exclusive) { m |= LinuxEpoll.RDHUP }
        if interest.contains(.write) { m |= LinuxEpoll.OUT }
        if interest.contains(.exclusive) { m |= LinuxEpoll.EXCLUSIVE }
        if interest.contains(.edge) { m |= LinuxEpoll.ET }
        return m
    }

    private func control(_ op: Int32, _ fd: Int32, _ interest: EventInterest) -> Int32 {
        var raw: (UInt64, UInt64) = (0, 0)
        return withUnsafeMutableBytes(of: &raw) { p in
            p.storeBytes(of: mask(interest), toByteOffset: 0, as: UInt32.self)
            p.storeBytes(of: UInt64(UInt32(bitPattern: fd)), toByteOffset: LinuxEpoll.dataOffset, as: UInt64.self)
            return fns.ctl(epfd, op, fd, p.baseAddress)
        }
    }

    func add(_ fd: Int32, interest: EventInterest) -> Bool {
        control(LinuxEpoll.CTL_ADD, fd, interest) == 0
    }

    func modify(_ fd: Int32, interest: EventInterest) {
        _ = control(LinuxEpoll.CTL_MOD, fd, interest)
    }

    func remove(_ fd: Int32) {
        _ = control(LinuxEpoll.CTL_DEL, fd, [])
    }

    func wait(timeoutMilliseconds: Int32, _ body: (ReadyEvent) -> Void) {
        let n = fns.wait(epfd, events, capacity, timeoutMilliseconds)
        guard n > 0 else { return }
        for i in 0..<Int(n) {
            let base = i * LinuxEpoll.eventSize
            let bits = events.loadUnaligned(fromByteOffset: base, as: UInt32.self)
            let data = events.loadUnaligned(fromByteOffset: base + LinuxEpoll.dataOffset, as: UInt64.self)
            body(ReadyEvent(fd: Int32(bitPattern: UInt32(truncatingIfNeeded: data)),
                            readable: bits & (LinuxEpoll.IN | LinuxEpoll.RDHUP) != 0,
                            writable: bits & LinuxEpoll.OUT != 0,
                            failed: bits & (LinuxEpoll.ERR | LinuxEpoll.HUP) != 0))
        }
    }
}
