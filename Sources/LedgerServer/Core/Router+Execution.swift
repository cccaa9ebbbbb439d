extension Router {
    /// Which thread runs a route's handler, declared where the route is registered.
    ///
    /// The event loops only parse, route and write bytes unless a handler's own work is
    /// small and bounded. A handler that runs on a loop and writes has its answer built on
    /// that loop too: storage hands the outcome straight back to it.
    enum Execution: Sendable, Equatable {
        /// On the connection's event loop, always: no storage, nothing that blocks (`/healthz`).
        case inline
        /// Short and bounded (a read of a few rows, a write that validates its body and
        /// queues it): on the event loop when storage answers without a network round trip
        /// (SQLite) and the body is small; otherwise on a worker.
        case short
        /// Reads nothing: once the caller is known it only validates its body and queues a
        /// write. As `short`, and on the event loop over PostgreSQL too when the caller's
        /// token is remembered (no storage read at all on the loop).
        case queuedWrite
        /// On a worker, always: long or blocking work (the change feed and batch push, sync
        /// status, readiness, App Store verification and entitlement signing).
        case worker

        /// Largest request body handled on an event loop, in bytes. 64 KiB.
        static let loopBodyLimit = 64 * 1024

        /// Whether the handler runs on the event loop that read the request, for a body of
        /// `bodyBytes`, over storage that answers locally (`storageIsLocal`, SQLite) or not;
        /// `callerKnown` is asked only for a queued write over remote storage.
        func runsOnLoop(bodyBytes: Int, storageIsLocal: Bool, callerKnown: () -> Bool) -> Bool {
            switch self {
            case .inline: return true
            case .worker: return false
            case .short: return storageIsLocal && bodyBytes <= Self.loopBodyLimit
            case .queuedWrite: return bodyBytes <= Self.loopBodyLimit && (storageIsLocal || callerKnown())
            }
        }
    }
}
