import Foundation
import LedgerClient
import LedgerModel

/// Sits between a ledger and its server and, driven by a seeded generator, drops requests
/// before they are sent or responses after the server applied them — the two failures a phone
/// sees on a bad network — or takes the device offline altogether. Open a ledger on it with
/// `Ledger.open(store:credentials:transport:)`; change `faults` while the test runs.
///
/// ```swift
/// let network = FaultInjectingTransport(server: serverURL, seed: 1)
/// let ledger = try await Ledger.open(store: url, credentials: InMemoryCredentialStore(), transport: network)
/// network.faults.offline = true      // syncs now fail as offline; changes stay queued
/// ```
public final class FaultInjectingTransport: Transport {
    /// What the transport does with each request.
    public struct Faults: Sendable, Equatable {
        /// Probability (0…1) that a request is lost before reaching the server; default 0.
        public var dropRequest: Double
        /// Probability (0…1) that the response is lost after the server handled the request;
        /// default 0.
        public var dropResponse: Double
        /// When true every request fails as unreachable (the device is offline); default false.
        public var offline: Bool

        /// Faults with the given settings; by default none.
        public init(dropRequest: Double = 0, dropResponse: Double = 0, offline: Bool = false) {
            self.dropRequest = dropRequest
            self.dropResponse = dropResponse
            self.offline = offline
        }
    }

    private struct State {
        var rng: SeededGenerator
        var faults: Faults
        var droppedRequests = 0
        var droppedResponses = 0
    }

    private let inner: any Transport
    private let state: Locked<State>

    /// Between a ledger and the kidledger server at `server` (its base URL, e.g.
    /// `http://127.0.0.1:8080`), reached over HTTP. `seed` makes the sequence of faults
    /// reproducible.
    public convenience init(server: URL, seed: UInt64, faults: Faults = Faults()) {
        self.init(wrapping: URLSessionTransport(baseURL: server) as any Transport, seed: seed, faults: faults)
    }

    /// Between a ledger and the in-process server `inner`. `seed` makes the sequence of faults
    /// reproducible.
    public convenience init(wrapping inner: InMemoryTransport, seed: UInt64, faults: Faults = Faults()) {
        self.init(wrapping: inner as any Transport, seed: seed, faults: faults)
    }

    /// Wraps any transport; `seed` makes the sequence of faults reproducible.
    package init(wrapping inner: any Transport, seed: UInt64, faults: Faults = Faults()) {
        self.inner = inner
        self.state = Locked(State(rng: SeededGenerator(seed: seed), faults: faults))
    }

    /// The current fault settings; changing them affects the next request.
    public var faults: Faults {
        get { state.withLock { $0.faults } }
        set { state.withLock { $0.faults = newValue } }
    }

    /// How many requests and responses were dropped so far (offline refusals not counted).
    public var injected: (requests: Int, responses: Int) {
        state.withLock { ($0.droppedRequests, $0.droppedResponses) }
    }

    package func send(_ request: TransportRequest) throws -> TransportResponse {
        try send(request, cancellation: nil)
    }

    package func send(_ request: TransportRequest, cancellation: SyncCancellation?) throws -> TransportResponse {
        let (offline, dropReq, dropResp) = state.withLock { s -> (Bool, Bool, Bool) in
            let a = Double.random(in: 0..<1, using: &s.rng) < s.faults.dropRequest
            let b = Double.random(in: 0..<1, using: &s.rng) < s.faults.dropResponse
            if a { s.droppedRequests += 1 } else if b { s.droppedResponses += 1 }
            return (s.faults.offline, a, b)
        }
        if offline { throw TransportError.unreachable("offline") }
        if dropReq { throw TransportError.unreachable("request dropped") }
        let response = try inner.send(request, cancellation: cancellation)
        if dropResp { throw TransportError.unreachable("response dropped") }
        return response
    }
}
