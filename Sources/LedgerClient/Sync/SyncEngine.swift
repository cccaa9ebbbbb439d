import Foundation
import LedgerModel

/// Pushes the pending queue, pulls the change feed and merges it into the replica.
/// Calls block; run them off any UI thread. One engine per store.
public final class SyncEngine {
    public let store: LedgerStore
    /// The API client; its token is read from the store on every sync.
    public var api: APIClient
    /// Backoff for transient failures.
    public var retry: RetryPolicy
    /// Milliseconds since the epoch; replaceable for tests.
    public var now: @Sendable () -> Int64
    /// Records per push (the server takes at most 400); default 400.
    public var pushBatchSize = 400
    /// Records per pulled page (1…1000); default 500.
    public var pullPageSize = 500

    /// What one sync did.
    public struct Report: Sendable, Equatable {
        public var pushed = 0
        public var pulledChildren = 0
        public var pulledTransactions = 0
        public var conflicts = 0
        public var rejected = 0
        /// Pages dropped because the household or mode changed while they were in flight.
        public var droppedPages = 0
        public init() {}
    }

    public init(store: LedgerStore, transport: any Transport, retry: RetryPolicy = RetryPolicy(),
                now: @escaping @Sendable () -> Int64 = { Timestamp.nowMs() }) {
        self.store = store
        self.api = APIClient(transport: transport)
        self.retry = retry
        self.now = now
    }

    /// Brings the replica and the server together: continues an interrupted migration or join,
    /// then pushes, pulls (long-polling up to `wait` seconds when nothing is new) and pushes
    /// again what conflict resolution queued. Records the outcome for `status`.
    @discardableResult
    public func sync(wait: Int = 0) throws -> Report {
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
            try push(into: &report)
            try pull(wait: wait, into: &report)
            if try store.pendingCount() > 0 { try push(into: &report) }
            try store.transaction {
                try store.set(.lastOutcome, nil)
                try store.set(.lastSyncAt, String(now()))
            }
        } catch let error as APIError {
            throw try record(error, duringSync: true)
        }
        return report
    }

    /// Loads the token and refuses to talk to the server under a switched account.
    func prepare() throws {
        guard let token = try api.token ?? store.string(.token) else { throw ClientError.notSignedIn }
        api.token = token
        if try store.attention() == .accountChanged { throw ClientError.frozen(.accountChanged) }
    }

    /// Persists what a failed call means for the status and returns the error to show.
    /// `duringSync`: the call was the household's feed or push, so a 404 `not_found` means the
    /// household is gone; elsewhere a 404 (an unknown handle, no share) is only that call's answer.
    func record(_ error: APIError, duringSync: Bool = false) throws -> ClientError {
        if error.isTransient {
            try store.set(.lastOutcome, "offline")
            return .offline(error.description)
        }
        let shared = try store.phase() == .shared
        switch (error.status, error.code) {
        case (401, _):
            try store.set(.lastOutcome, "unauthenticated")
            return .signedOut
        case (403, "access_revoked"):
            try store.setAttention(.accessRevoked)
            try store.set(.lastOutcome, nil)
            return .frozen(.accessRevoked)
        case (403, "read_only"):
            try store.setAttention(.readOnly)
            try store.set(.lastOutcome, nil)
            return .frozen(.readOnly)
        case (404, "not_found") where duringSync && shared:
            try store.setAttention(.householdDeleted)
            try store.set(.lastOutcome, nil)
            return .frozen(.householdDeleted)
        default:
            try store.set(.lastOutcome, nil)
            return .server(error)
        }
    }
}
