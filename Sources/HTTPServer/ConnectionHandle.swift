import Synchronization

/// The thread-safe identity of one connection, shared with its responders.
final class ConnectionHandle: Sendable {
    let id: UInt64
    let fd: Int32
    let closed = Atomic<Bool>(false)

    init(id: UInt64, fd: Int32) {
        self.id = id
        self.fd = fd
    }
}
