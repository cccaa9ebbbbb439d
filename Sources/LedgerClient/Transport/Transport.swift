/// One HTTP request as the client sends it.
package struct TransportRequest: Sendable, Equatable {
    /// Method token, e.g. `GET`.
    package var method: String
    /// Path and query below the server's base URL, e.g. `/v1/me?x=1`.
    package var path: String
    /// Header fields; names are matched case-insensitively by conformers.
    package var headers: [String: String]
    /// Request body (empty for none).
    package var body: [UInt8]
    /// Seconds before the request is abandoned; default 30.
    package var timeout: Double

    package init(method: String, path: String, headers: [String: String] = [:], body: [UInt8] = [], timeout: Double = 30) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// One HTTP response: status, headers (lowercased names) and the decoded body.
package struct TransportResponse: Sendable, Equatable {
    package var status: Int
    /// Header fields with lowercased names.
    package var headers: [String: String]
    /// Body bytes after any content decoding.
    package var body: [UInt8]

    package init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        var lowered: [String: String] = [:]
        for (k, v) in headers { lowered[k.lowercased()] = v }
        self.headers = lowered
        self.body = body
    }

    /// The value of header `name` (case-insensitive).
    package func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// Failures below HTTP: the request may or may not have reached the server.
package enum TransportError: Error, Equatable, Sendable {
    /// No connection could be made or it broke; the request may have been applied.
    case unreachable(String)
    /// No answer in time.
    case timedOut
    /// The caller cancelled the request (`SyncCancellation`); it may have reached the server.
    case cancelled
    /// The server's answer could not be read.
    case invalidResponse(String)
}

/// The I/O seam between the client and a kidledger server. Calls block the calling thread
/// until the response arrives; call them off any UI thread.
package protocol Transport: Sendable {
    /// Sends `request` and returns the server's response, or throws `TransportError`.
    func send(_ request: TransportRequest) throws -> TransportResponse
    /// Sends `request`, abandoning it as soon as `cancellation` is cancelled (throwing
    /// `TransportError.cancelled`). The default checks before and after a blocking `send`;
    /// transports that can interrupt a request in flight override it.
    func send(_ request: TransportRequest, cancellation: SyncCancellation?) throws -> TransportResponse
}

extension Transport {
    package func send(_ request: TransportRequest, cancellation: SyncCancellation?) throws -> TransportResponse {
        if cancellation?.isCancelled == true { throw TransportError.cancelled }
        let response = try send(request)
        if cancellation?.isCancelled == true { throw TransportError.cancelled }
        return response
    }
}
