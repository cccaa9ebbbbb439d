import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import GzipKit
import LedgerModel

/// The production transport: HTTP(S) through `URLSession`, gzip-aware.
package final class URLSessionTransport: Transport {
    /// The server's base URL, e.g. `http://127.0.0.1:8080` (no trailing `/v1`).
    package let baseURL: URL
    private let session: URLSession
    /// Largest decoded response body accepted, in bytes (default 64 MiB).
    private let maxResponseBytes: Int
    /// How often a waiting request looks at its cancellation.
    static let cancellationPoll = 0.05

    /// `baseURL` must be an absolute http or https URL.
    package init(baseURL: URL, maxResponseBytes: Int = 64 << 20) {
        self.baseURL = baseURL
        self.maxResponseBytes = maxResponseBytes
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        self.session = URLSession(configuration: configuration)
    }

    deinit { session.finishTasksAndInvalidate() }

    package func send(_ request: TransportRequest) throws -> TransportResponse {
        try send(request, cancellation: nil)
    }

    /// Sends `request`; when `cancellation` fires, the URLSession task is cancelled and this
    /// returns within about 50 ms with `TransportError.cancelled`.
    package func send(_ request: TransportRequest, cancellation: SyncCancellation?) throws -> TransportResponse {
        if cancellation?.isCancelled == true { throw TransportError.cancelled }
        var base = baseURL.absoluteString
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base + request.path) else {
            throw TransportError.invalidResponse("bad URL \(base + request.path)")
        }
        var urlRequest = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData,
                                    timeoutInterval: request.timeout)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if urlRequest.value(forHTTPHeaderField: "Accept-Encoding") == nil {
            urlRequest.setValue("gzip", forHTTPHeaderField: "Accept-Encoding")
        }
        if !request.body.isEmpty { urlRequest.httpBody = Data(request.body) }

        let outcome = Locked<Result<TransportResponse, TransportError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let limit = maxResponseBytes
        let task = session.dataTask(with: urlRequest) { data, response, error in
            let result: Result<TransportResponse, TransportError>
            if let error {
                let nsError = error as NSError
                if nsError.domain == NSURLErrorDomain && nsError.code == NSURLErrorTimedOut {
                    result = .failure(.timedOut)
                } else {
                    result = .failure(.unreachable(error.localizedDescription))
                }
            } else if let http = response as? HTTPURLResponse {
                var headers: [String: String] = [:]
                for (key, value) in http.allHeaderFields {
                    headers[String(describing: key).lowercased()] = String(describing: value)
                }
                var body = [UInt8](data ?? Data())
                if body.count >= 2, body[0] == 0x1f, body[1] == 0x8b {
                    do { body = try Gzip.decompress(body, limit: limit) } catch {
                        result = .failure(.invalidResponse("corrupt gzip body"))
                        outcome.withLock { $0 = result }
                        done.signal()
                        return
                    }
                }
                result = .success(TransportResponse(status: http.statusCode, headers: headers, body: body))
            } else {
                result = .failure(.invalidResponse("no HTTP response"))
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        task.resume()
        // The session's own timeout fires first; the deadline guards against a lost callback.
        let deadline = DispatchTime.now() + request.timeout + 5
        while true {
            let slice = cancellation == nil ? deadline : min(deadline, .now() + Self.cancellationPoll)
            if done.wait(timeout: slice) == .success { break }
            if cancellation?.isCancelled == true {
                task.cancel()
                throw TransportError.cancelled
            }
            if DispatchTime.now() >= deadline {
                task.cancel()
                throw TransportError.timedOut
            }
        }
        switch outcome.withLock({ $0 }) {
        case .success(let response): return response
        case .failure(let error): throw error
        case nil: throw TransportError.invalidResponse("no result")
        }
    }
}
