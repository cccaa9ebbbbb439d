import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LedgerModel

/// What became of one notify call to a Matrix push gateway.
enum PushGatewayOutcome: Sendable, Equatable {
    /// 200: the gateway took the notification; `rejected` lists push keys it will never
    /// deliver to again (the app was removed, the token expired).
    case accepted(rejected: [String])
    /// A 4xx: the request will never be taken as it is; not retried.
    case refused(status: Int)
    /// A 5xx, a timeout, a connection that failed: worth another attempt later.
    case failed(String)
}

/// Posts notifications to a push gateway (`POST /_matrix/push/v1/notify`).
protocol PushGatewayClient: Sendable {
    /// Sends `body` to `url`; `completion` runs once, on a thread of the client's, with the
    /// outcome and the call's duration in seconds.
    func notify(_ url: URL, body: [UInt8], completion: @escaping @Sendable (PushGatewayOutcome, Double) -> Void)
}

/// `PushGatewayClient` over the toolchain's URLSession (HTTPS verified by the system), with
/// a timeout per call; redirects are not followed (the server talks only to the URLs the
/// operator configured).
final class URLSessionPushGatewayClient: NSObject, PushGatewayClient, URLSessionTaskDelegate, @unchecked Sendable {
    let timeout: TimeInterval
    private var session: URLSession!

    /// - Parameter timeout: seconds a call may take, connection included.
    init(timeout: TimeInterval) {
        self.timeout = timeout
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        configuration.httpMaximumConnectionsPerHost = 8
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
    }

    func invalidate() { session.invalidateAndCancel() }

    func notify(_ url: URL, body: [UInt8], completion: @escaping @Sendable (PushGatewayOutcome, Double) -> Void) {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.httpBody = Data(body)
        let started = DispatchTime.now().uptimeNanoseconds
        session.dataTask(with: request) { data, response, error in
            let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
            completion(Self.outcome(data: data, response: response, error: error), seconds)
        }.resume()
    }

    static func outcome(data: Data?, response: URLResponse?, error: (any Error)?) -> PushGatewayOutcome {
        guard let http = response as? HTTPURLResponse else {
            return .failed(error.map { String(describing: $0) } ?? "no response")
        }
        switch http.statusCode {
        case 200..<300:
            let rejected = data.flatMap { try? JSONValue.parse(Array($0)) }?["rejected"]?.arrayValue?.compactMap(\.stringValue)
            return .accepted(rejected: rejected ?? [])
        case 300..<500: return .refused(status: http.statusCode)   // a redirect is not followed
        default: return .failed("HTTP \(http.statusCode)")
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
                    newRequest request: URLRequest, completionHandler: @escaping (URLRequest?) -> Void) {
        completionHandler(nil)
    }
}
