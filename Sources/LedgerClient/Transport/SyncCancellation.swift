import LedgerModel

/// A cancellation signal shared by a sync and the requests it sends. Cancelling it makes the
/// engine stop at its next step (never inside a local transaction) and the transport abandon
/// the request in flight. Calling code wires it to its task:
/// `withTaskCancellationHandler { engine.sync(…) } onCancel: { cancellation.cancel() }`.
package final class SyncCancellation: Sendable {
    private let flag = Locked(false)

    package init() {}

    /// Signals cancellation; idempotent.
    package func cancel() { flag.withLock { $0 = true } }

    /// True once `cancel()` was called.
    package var isCancelled: Bool { flag.withLock { $0 } }
}
