import Foundation
import LedgerModel

/// Pushes the pending queue, pulls the change feed and merges it into the replica.
/// Calls block; run them off any UI thread. One engine per store.
final class SyncEngine {
    let store: LedgerStore
    /// The API client; its token is read from the store on every sync.
    var api: APIClient
    /// Backoff for transient failures.
    var retry: RetryPolicy
    /// Milliseconds since the epoch; replaceable for tests.
    var now: @Sendable () -> Int64
    /// Records per push (the server takes at most 400); default 400.
    var pushBatchSize = 400
    /// Records per pulled page (1…1000); default 500.
    var pullPageSize = 500
    /// Records per page of a join's first fetch (1…1000); default 1000, the most the server hands out.
    var joinPageSize = 1000
    /// When set, a running sync stops at its next step once it is cancelled, abandoning the
    /// request in flight, and throws `CancellationError`.
    var cancellation: SyncCancellation? {
        didSet { api.cancellation = cancellation }
    }
    /// Receives what syncs did (remote changes merged, changes the server refused, records
    /// that could not be merged), each after the local transaction that stored it committed.
    /// Called on the syncing thread.
    var onEvent: (@Sendable (SyncEvent) -> Void)?

    /// What one sync did.
    struct Report: Sendable, Equatable {
        var pushed = 0
        var pulledChildren = 0
        var pulledTransactions = 0
        var conflicts = 0
        var rejected = 0
        /// Pages dropped because the household or mode changed while they were in flight.
        var droppedPages = 0
        /// Records queued again because the server went back in time and lacked them.
        var reconciled = 0
        init() {}
    }

    init(store: LedgerStore, transport: any Transport, retry: RetryPolicy = RetryPolicy(),
                now: @escaping @Sendable () -> Int64 = { Timestamp.nowMs() }) {
        self.store = store
        self.api = APIClient(transport: transport)
        self.retry = retry
        self.now = now
    }

    /// Brings the replica and the server together: continues an interrupted migration or join,
    /// then pushes, pulls (long-polling up to `wait` seconds when nothing is new) and pushes
    /// again what conflict resolution queued. Records the outcome for `status`.
    ///
    /// Throws `LedgerError` for what the server said, `StoreFailure` when the local database
    /// failed (the status is then left as it was: a local failure says nothing about the
    /// server), `CancellationError` when `cancellation` fired (the store is consistent: every
    /// step is its own local transaction), and `UploadIncomplete` when enabling sharing could
    /// not push every record yet.
    @discardableResult
    func sync(wait: Int = 0) throws -> Report {
        try StoreFailure.mapping {
            try prepare()
            var report = Report()
            do {
                switch try store.phase() {
                case .localOnly:
                    return report
                case .sharing:
                    try ShareFlow(engine: self).resume(into: &report)
                case .joining(let phase, let invitation, let household):
                    try JoinFlow(engine: self).resume(phase: phase, invitationId: invitation, householdId: household)
                case .shared:
                    break
                }
                try checkCancelled()
                try push(into: &report)
                try checkCancelled()
                try pull(wait: wait, into: &report)
                try checkCancelled()
                if try store.pendingCount() > 0 { try push(into: &report) }
                try checkCancelled()
                try reconcileIfNeeded(into: &report)
                try store.transaction {
                    try store.setLastOutcome(nil)
                    try store.set(.lastSyncAt, String(now()))
                }
            } catch let error as APIError {
                throw try record(error, duringSync: true)
            }
            return report
        }
    }

    /// Throws `CancellationError` once `cancellation` fired. Called between steps, never inside
    /// a local transaction.
    func checkCancelled() throws {
        if cancellation?.isCancelled == true { throw CancellationError() }
    }

    /// Runs one server call with the retry policy, waiting between tries in slices so that a
    /// cancellation is noticed within about 50 ms.
    func retrying<T>(_ operation: () throws(APIError) -> T) throws(APIError) -> T {
        try retry.run(cancellation: cancellation, operation)
    }

    /// Hands events to `onEvent`; call after the transaction that made them durable committed.
    func emit(_ events: [SyncEvent]) {
        guard let onEvent else { return }
        for event in events { onEvent(event) }
    }

    /// Loads the token and refuses to talk to the server under a switched account.
    func prepare() throws {
        guard let token = try api.token ?? store.string(.token) else { throw ClientError.notSignedIn }
        api.token = token
        api.cancellation = cancellation
        if try store.attention() == .accountChanged { throw ClientError.frozen(.accountChanged) }
    }

    /// Persists what a failed call means for the status and returns the error to show
    /// (`CancellationError` for a cancelled call, which changes nothing).
    /// `duringSync`: the call was the household's feed or push, so a 404 `not_found` means the
    /// household is gone; elsewhere a 404 (an unknown handle, no share) is only that call's answer.
    func record(_ error: APIError, duringSync: Bool = false) throws -> any Error {
        if error.isCancellation { return CancellationError() }
        if error.isTransient {
            try store.setLastOutcome(.offline)
            return ClientError.offline(error.description)
        }
        let shared = try store.phase() == .shared
        switch (error.status, error.code) {
        case (401, "invalid_id_token"), (401, "recovery_failed"):
            // About the identity token or code sent, not this device's sign-in.
            try store.setLastOutcome(nil)
            return ClientError.server(error)
        case (401, _):
            try store.setLastOutcome(.unauthenticated)
            return ClientError.signedOut
        case (403, "access_revoked"):
            try store.setAttention(.accessRevoked)
            try store.setLastOutcome(nil)
            return ClientError.frozen(.accessRevoked)
        case (403, "read_only"):
            try store.setAttention(.readOnly)
            try store.setLastOutcome(nil)
            return ClientError.frozen(.readOnly)
        case (404, "not_found") where duringSync && shared:
            try store.setAttention(.householdDeleted)
            try store.setLastOutcome(nil)
            return ClientError.frozen(.householdDeleted)
        default:
            try store.setLastOutcome(nil)
            return ClientError.server(error)
        }
    }
}
