import LedgerClient

/// A kidledger server played by a closure in the same process (tests, previews): every request
/// a ledger sends goes to the closure, and what it returns is the server's answer. Open a
/// ledger on it with `Ledger.open(store:credentials:transport:)`.
///
/// ```swift
/// let server = InMemoryTransport { request in
///     guard request.path == "/v1/me" else { return .init(status: 404) }
///     return .json(#"{"account": {…}, "token": {…}}"#)
/// }
/// ```
///
/// An error thrown by the closure is a request that got no answer: the ledger sees the server
/// as unreachable, keeps its changes queued and reports `.offline`.
public struct InMemoryTransport: Transport {
    /// A request as the ledger sends it.
    public struct Request: Sendable, Equatable {
        /// Method token, e.g. `GET`.
        public var method: String
        /// Path and query below the server's base URL, e.g. `/v1/me`.
        public var path: String
        /// Header fields as sent (`Authorization: Bearer …`, `Content-Type`, …).
        public var headers: [String: String]
        /// The body: JSON for requests that carry one, empty otherwise.
        public var body: [UInt8]

        /// A request, for a test that calls its own `respond` closure directly.
        public init(method: String, path: String, headers: [String: String] = [:], body: [UInt8] = []) {
            self.method = method
            self.path = path
            self.headers = headers
            self.body = body
        }

        /// The value of header `name` (case-insensitive), nil when absent.
        public func header(_ name: String) -> String? {
            headers.first { $0.key.lowercased() == name.lowercased() }?.value
        }

        /// The body as UTF-8 text.
        public var text: String { String(decoding: body, as: UTF8.self) }
    }

    /// The server's answer.
    public struct Response: Sendable, Equatable {
        /// HTTP status, e.g. 200.
        public var status: Int
        /// Header fields (names are matched case-insensitively).
        public var headers: [String: String]
        /// The body, uncompressed.
        public var body: [UInt8]

        /// An answer with `status`, no headers and an empty body unless given.
        public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
            self.status = status
            self.headers = headers
            self.body = body
        }

        /// A JSON answer with `text` as its body; status 200 unless given.
        public static func json(_ text: String, status: Int = 200) -> Response {
            Response(status: status, headers: ["Content-Type": "application/json"], body: Array(text.utf8))
        }
    }

    private let handler: @Sendable (TransportRequest) throws -> TransportResponse

    /// `respond` plays the server; it may be called from any thread, one request at a time per
    /// sync but from two syncs at once (a ledger's live long-poll and its uploads).
    public init(respond: @escaping @Sendable (Request) throws -> Response) {
        handler = { request in
            let response = try respond(Request(method: request.method, path: request.path, headers: request.headers,
                                               body: request.body))
            return TransportResponse(status: response.status, headers: response.headers, body: response.body)
        }
    }

    /// `handler` plays the server; errors it throws reach the caller unchanged.
    package init(_ handler: @escaping @Sendable (TransportRequest) throws -> TransportResponse) {
        self.handler = handler
    }

    package func send(_ request: TransportRequest) throws -> TransportResponse {
        try handler(request)
    }
}
