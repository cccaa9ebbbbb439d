/// Readiness interest for a file descriptor in an `EventQueue`.
struct EventInterest: OptionSet, Sendable {
    let rawValue: UInt32
    static let read = EventInterest(rawValue: 1)
    static let write = EventInterest(rawValue: 2)
    /// Wake only one of several queues waiting on the same descriptor.
    static let exclusive = EventInterest(rawValue: 4)
    /// Edge-triggered: reported once per change of the descriptor's state (for an eventfd,
    /// once per write), not for as long as it stays ready.
    static let edge = EventInterest(rawValue: 8)
}

/// One readiness notification.
struct ReadyEvent: Sendable {
    var fd: Int32
    var readable: Bool
    var writable: Bool
    /// Hang-up or error on the descriptor.
    var failed: Bool
}

/// The I/O seam of an event loop: a level-triggered readiness queue.
protocol EventQueue: ~Copyable {
    func add(_ fd: Int32, interest: EventInterest) -> Bool
    func modify(_ fd: Int32, interest: EventInterest)
    func remove(_ fd: Int32)
    /// Waits up to `timeoutMilliseconds` (-1: forever) and calls `body` for each ready descriptor.
    func wait(timeoutMilliseconds: Int32, _ body: (ReadyEvent) -> Void)
}
