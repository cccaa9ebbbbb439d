import LedgerClient

/// A transport that hands each request to a closure in the same process (tests, previews).
package struct InMemoryTransport: Transport {
    private let handler: @Sendable (TransportRequest) throws -> TransportResponse

    /// `handler` plays the server; errors it throws reach the caller unchanged.
    package init(_ handler: @escaping @Sendable (TransportRequest) throws -> TransportResponse) {
        self.handler = handler
    }

    package func send(_ request: TransportRequest) throws -> TransportResponse {
        try handler(request)
    }
}
