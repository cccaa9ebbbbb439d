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
        /// A read whose only storage access is `RequestContext.cachedRead` of an answer about
        /// one household (after authentication and checks of the request alone). As `short`,
        /// and on the event loop over PostgreSQL too when the caller's token is remembered:
        /// `cachedRead` there hands a kept answer to the stamp batch and anything else to a
        /// worker, and never blocks the loop.
        case keptRead
        /// On a worker, always: long or blocking work (the change feed and batch push, sync
        /// status, readiness, App Store verification and entitlement signing).
        case worker

        /// Largest request body handled on an event loop, in bytes. 64 KiB.
        static let loopBodyLimit = 64 * 1024

        /// Where a request with a body of `bodyBytes` runs, over storage that answers
        /// locally (`storageIsLocal`, SQLite) or not.
        func place(bodyBytes: Int, storageIsLocal: Bool) -> Place {
            switch self {
            case .inline: return .loop
            case .worker: return .worker
            case .short: return storageIsLocal && bodyBytes <= Self.loopBodyLimit ? .loop : .worker
            case .queuedWrite, .keptRead:
                guard bodyBytes <= Self.loopBodyLimit else { return .worker }
                return storageIsLocal ? .loop : .loopIfCallerKnown
            }
        }
    }

    /// Where one request runs.
    enum Place: Sendable, Equatable {
        case loop
        case worker
        /// On the event loop when the caller's token is remembered (no storage read to find
        /// it), else on a worker.
        case loopIfCallerKnown
    }
}
