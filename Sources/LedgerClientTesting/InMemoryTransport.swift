import LedgerClient

/// A transport that hands each request to a closure in the same process (tests, previews).
public struct InMemoryTransport: Transport {
    private let handler: @Sendable (TransportRequest) throws -> TransportResponse

    /// `handler` plays the server; errors it throws reach the caller unchanged.
    public init(_ handler: @escaping @Sendable (TransportRequest) throws -> TransportResponse) {
        self.handler = handler
    }

    public func send(_ request: TransportRequest) throws -> TransportResponse {
        try handler(request)
    }
}
