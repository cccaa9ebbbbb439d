import Foundation
import LedgerModel

/// One connection to the store with its own sync engine, used on one serial queue: network
/// calls block that queue's thread, never the `Ledger` actor or the caller's task. A `Ledger`
/// has two lanes (the live long-poll and the push lane), so a long-poll never holds up an upload.
final class SyncLane: @unchecked Sendable {
    private let queue: DispatchQueue
    private let store: LedgerStore
    private let engine: SyncEngine

    /// `events` hears what each sync did, on the lane's thread, after it was stored.
    init(path: String, transport: any Transport, name: String, events: @escaping @Sendable (SyncEvent) -> Void) throws {
        store = try LedgerStore(path: path)
        engine = SyncEngine(store: store, transport: transport)
        engine.onEvent = events
        queue = DispatchQueue(label: "kidledger.sync.\(name)")
    }

    /// Runs `body` with the engine on this lane's thread, signed in with `token`. Cancelling
    /// the calling task abandons the request in flight and the retry waits.
    func run<T: Sendable>(token: String?, retry: RetryPolicy,
                          _ body: @escaping @Sendable (SyncEngine) throws -> T) async throws -> T {
        let cancellation = SyncCancellation()
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                queue.async {
                    if cancellation.isCancelled { return continuation.resume(throwing: CancellationError()) }
                    self.engine.api.token = token
                    self.engine.cancellation = cancellation
                    self.engine.retry = retry
                    defer { self.engine.cancellation = nil }
                    do {
                        let value = try body(self.engine)
                        continuation.resume(returning: value)
                    } catch {
                        continuation.resume(throwing: cancellation.isCancelled ? CancellationError() : error)
                    }
                }
            }
        } onCancel: {
            cancellation.cancel()
        }
    }
}
