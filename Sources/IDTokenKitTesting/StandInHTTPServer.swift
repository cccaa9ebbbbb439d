import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A loopback stand-in for the HTTP endpoints a server or client calls out to in tests (a
/// provider's key set, Apple's `/auth/token` and `/auth/revoke`, a Matrix push gateway):
/// HTTP/1.1 on 127.0.0.1, one request per connection. Each path answers the status and JSON
/// body set for it (any other path the fallback), after the delay set for it; every request
/// is recorded with its body and the time it arrived.
public final class StandInHTTPServer: @unchecked Sendable {
    public struct Request: Sendable {
        public let method: String
        /// The request target as sent.
        public let path: String
        /// Field names in lower case.
        public let headers: [String: String]
        public let body: String
        public let receivedAt: Date

        /// `application/x-www-form-urlencoded` members of the body.
        public var form: [String: String] {
            var out: [String: String] = [:]
            for pair in body.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1).map {
                    String($0).replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? String($0)
                }
                out[parts[0]] = parts.count > 1 ? parts[1] : ""
            }
            return out
        }
    }

    public let port: UInt16
    private let listener: Int32
    private let lock = NSLock()
    private var answers: [String: (status: Int, body: [UInt8])] = [:]
    private var delays: [String: Double] = [:]
    private var fallback: (status: Int, body: [UInt8])
    private var received: [Request] = []
    private var stopped = false
    private let finished = DispatchSemaphore(value: 0)

    /// Starts serving on `port` of 127.0.0.1 (0: an ephemeral one; another: the port of a
    /// stand-in that stopped, to come back where the caller calls); paths without an answer of
    /// their own get `status` and `body` (default 404 `{"error":"not_found"}`).
    public init(port wanted: UInt16 = 0, status: Int = 404, body: [UInt8] = Array(#"{"error":"not_found"}"#.utf8)) throws {
        fallback = (status, body)
        #if canImport(Glibc)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let fd = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = wanted.bigEndian
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(fd, generic, length) == 0 && listen(fd, 16) == 0 && getsockname(fd, generic, &length) == 0
            }
        }
        guard bound else {
            close(fd)
            throw POSIXError(.EADDRINUSE)
        }
        listener = fd
        port = UInt16(bigEndian: address.sin_port)
        Thread { [self] in serve() }.start()
    }

    deinit { stop() }

    /// `http://127.0.0.1:<port>`.
    public var base: String { "http://127.0.0.1:\(port)" }

    public func url(_ path: String) -> URL { URL(string: base + path)! }

    /// Answers `path` with `status` and `body` from now on.
    public func answer(_ path: String, status: Int = 200, body: [UInt8]) {
        locked { answers[path] = (status, body) }
    }

    public func answer(_ path: String, status: Int = 200, json: String) { answer(path, status: status, body: Array(json.utf8)) }

    /// Answers `path` only after `seconds` from now on (a slow endpoint).
    public func delay(_ path: String, seconds: Double) { locked { delays[path] = seconds } }

    /// Answers every path without an answer of its own with `status` and `body` from now on.
    public func respond(status: Int, body: [UInt8]) { locked { fallback = (status, body) } }

    /// The requests received so far, in order.
    public var requests: [Request] { locked { received } }

    public func requests(_ path: String) -> [Request] { requests.filter { $0.path == path } }

    /// The request targets received so far, in order.
    public var paths: [String] { requests.map(\.path) }

    /// Stops listening and waits for the request being answered. Safe to call more than once.
    public func stop() {
        let wasRunning = locked { () -> Bool in
            defer { stopped = true }
            return !stopped
        }
        guard wasRunning else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        finished.wait()
        close(listener)
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    private func serve() {
        defer { finished.signal() }
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 {
                if errno == EINTR { continue }
                return
            }
            handle(client)
            close(client)
        }
    }

    private func handle(_ client: Int32) {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var headEnd: Int?
        var contentLength = 0
        while true {
            if headEnd == nil, let end = Self.headEnd(in: data) {
                headEnd = end
                let head = String(decoding: data[..<end], as: UTF8.self)
                for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    contentLength = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
            if let end = headEnd, data.count >= end + 4 + contentLength { break }
            guard data.count < 1 << 20 else { return }
            let count = read(client, &buffer, buffer.count)
            guard count > 0 else { return }
            data += buffer[0..<count]
        }
        let end = headEnd!
        let lines = String(decoding: data[..<end], as: UTF8.self).split(separator: "\r\n")
        let requestLine = lines.first?.split(separator: " ") ?? []
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            let parts = line.split(separator: ":", maxSplits: 1)
            if parts.count == 2 { headers[parts[0].lowercased()] = parts[1].trimmingCharacters(in: .whitespaces) }
        }
        let method = requestLine.first.map(String.init) ?? ""
        let path = requestLine.count > 1 ? String(requestLine[1]) : ""
        let body = String(decoding: data[(end + 4)...].prefix(contentLength), as: UTF8.self)
        let (status, answer, delay) = locked { () -> (Int, [UInt8], Double) in
            received.append(Request(method: method, path: path, headers: headers, body: body, receivedAt: Date()))
            let (status, answer) = answers[path] ?? fallback
            return (status, answer, delays[path] ?? 0)
        }
        if delay > 0 { Thread.sleep(forTimeInterval: delay) }
        let response = Array("HTTP/1.1 \(status) X\r\nContent-Type: application/json\r\nContent-Length: \(answer.count)\r\nConnection: close\r\n\r\n".utf8) + answer
        var sent = 0
        while sent < response.count {
            let count = response[sent...].withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            sent += count
        }
    }

    /// Where the head's blank line starts, if it has arrived.
    private static func headEnd(in data: [UInt8]) -> Int? {
        guard data.count >= 4 else { return nil }
        for i in 0...(data.count - 4)
        where data[i] == 13 && data[i + 1] == 10 && data[i + 2] == 13 && data[i + 3] == 10 {
            return i
        }
        return nil
    }
}
