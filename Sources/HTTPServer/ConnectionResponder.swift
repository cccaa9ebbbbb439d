import Synchronization

/// Completes one request on its connection; hands the response to the owning event loop.
final class ConnectionResponder: HTTPResponder {
    private let loop: EventLoop
    private let handle: ConnectionHandle
    private let sequence: UInt64
    private let answered = Atomic<Bool>(false)

    init(loop: EventLoop, handle: ConnectionHandle, sequence: UInt64) {
        self.loop = loop
        self.handle = handle
        self.sequence = sequence
    }

    func respond(_ response: consuming HTTPResponse) {
        guard answered.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged else { return }
        if handle.closed.load(ordering: .acquiring) { return }
        loop.deliver(consume response, to: handle, sequence: sequence)
    }

    func execute(_ work: @escaping @Sendable () -> Void) { loop.execute(work) }

    var isClosed: Bool {
        handle.closed.load(ordering: .acquiring) || loop.core.hardStopped.load(ordering: .relaxed)
    }
}
