import LedgerClient
import LedgerModel

/// Wraps a transport and, driven by a seeded generator, drops requests before they are sent
/// or responses after the server applied them — the two failures a phone sees on a bad network.
package final class FaultInjectingTransport: Transport {
    /// What the wrapper does with each request.
    package struct Faults: Sendable {
        /// Probability (0…1) that a request is lost before reaching the server.
        package var dropRequest: Double
        /// Probability (0…1) that the response is lost after the server handled the request.
        package var dropResponse: Double
        /// When true every request fails as unreachable (the device is offline).
        package var offline: Bool

        package init(dropRequest: Double = 0, dropResponse: Double = 0, offline: Bool = false) {
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

    /// `seed` makes the sequence of faults reproducible.
    package init(wrapping inner: any Transport, seed: UInt64, faults: Faults = Faults()) {
        self.inner = inner
        self.state = Locked(State(rng: SeededGenerator(seed: seed), faults: faults))
    }

    /// The current fault settings.
    package var faults: Faults {
        get { state.withLock { $0.faults } }
        set { state.withLock { $0.faults = newValue } }
    }

    /// Counts of injected faults so far.
    package var injected: (requests: Int, responses: Int) {
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
