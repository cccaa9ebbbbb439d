import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

/// Reads key sets from files and fetches them with `URLSession` (an ephemeral session: no
/// cookies, no cache), answering only a 200 of at most ``JSONWebKeySet/maximumSize`` bytes
/// from an https origin (after any redirect).
public final class SystemKeySetFetcher: KeySetFetcher {
    /// The longest a fetch may take, in seconds (default 10).
    public let timeout: TimeInterval
    private let session: URLSession

    public init(timeout: TimeInterval = 10) {
        self.timeout = timeout
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.timeoutIntervalForResource = timeout
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.httpCookieStorage = nil
        configuration.urlCache = nil
        session = URLSession(configuration: configuration)
    }

    deinit { session.finishTasksAndInvalidate() }

    public func fetch(_ location: KeySetLocation) throws -> [UInt8] {
        switch location {
        case .file(let path): return try Self.read(path)
        case .url(let url): return try download(url)
        }
    }

    private static func read(_ path: String) throws(KeySetError) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else { throw KeySetError("\(path): cannot open") }
        defer { try? handle.close() }
        let data: Data?
        do { data = try handle.read(upToCount: JSONWebKeySet.maximumSize + 1) } catch {
            throw KeySetError("\(path): \(error.localizedDescription)")
        }
        let bytes = [UInt8](data ?? Data())
        guard bytes.count <= JSONWebKeySet.maximumSize else {
            throw KeySetError("\(path): larger than \(JSONWebKeySet.maximumSize) bytes")
        }
        return bytes
    }

    private func download(_ url: URL) throws(KeySetError) -> [UInt8] {
        guard KeySetLocation.isAllowed(url) else { throw KeySetError("\(url): not an https URL") }
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let outcome = Mutex<Result<(Data, URLResponse), KeySetError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        let task = session.dataTask(with: request) { data, response, error in
            let result: Result<(Data, URLResponse), KeySetError>
            if let data, let response {
                result = .success((data, response))
            } else {
                result = .failure(KeySetError("\(url): \(error?.localizedDescription ?? "no response")"))
            }
            outcome.withLock { $0 = result }
            done.signal()
        }
        task.resume()
        if done.wait(timeout: .now() + timeout + 1) == .timedOut {
            task.cancel()
            throw KeySetError("\(url): no answer within \(Int(timeout)) s")
        }
        guard let result = outcome.withLock({ $0 }) else { throw KeySetError("\(url): no response") }
        let (data, response) = try result.get()
        guard let http = response as? HTTPURLResponse else { throw KeySetError("\(url): not an HTTP response") }
        guard http.statusCode == 200 else { throw KeySetError("\(url): HTTP status \(http.statusCode)") }
        if let final = http.url, !KeySetLocation.isAllowed(final) {
            throw KeySetError("\(url): redirected to \(final), not an https URL")
        }
        guard data.count <= JSONWebKeySet.maximumSize else {
            throw KeySetError("\(url): larger than \(JSONWebKeySet.maximumSize) bytes")
        }
        return [UInt8](data)
    }
}
