import Foundation
import Glibc
import Synchronization

/// A loopback stand-in for the HTTP endpoints the server calls out to: Apple's
/// `/auth/token` and `/auth/revoke`, a provider's key set, a Matrix push gateway. One
/// request per connection; each path answers the status and body set for it (404
/// otherwise), after the delay set for it; every request is recorded with its form body
/// decoded and the time it arrived.
final class AppleStandIn: Sendable {
    struct Request: Sendable {
        let method: String
        let path: String
        let headers: [String: String]
        let body: String
        let receivedAt: Date
        /// `application/x-www-form-urlencoded` members of the body.
        var form: [String: String] {
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

    let port: UInt16
    private let listener: Int32
    private let state = Mutex<(answers: [String: (Int, [UInt8])], delays: [String: Double], requests: [Request], stopped: Bool)>(
        ([:], [:], [], false))
    private let finished = DispatchSemaphore(value: 0)

    /// Listens on `port` of 127.0.0.1 (0: an ephemeral one; another: one a stand-in that
    /// stopped had, to come back where the server calls).
    init(port wanted: UInt16 = 0) throws {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
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

    var base: String { "http://127.0.0.1:\(port)" }

    /// Answers `path` with `status` and `body` from now on.
    func answer(_ path: String, status: Int = 200, body: [UInt8]) {
        state.withLock { $0.answers[path] = (status, body) }
    }

    func answer(_ path: String, status: Int = 200, json: String) { answer(path, status: status, body: Array(json.utf8)) }

    /// Answers `path` only after `seconds` from now on (a slow endpoint).
    func delay(_ path: String, seconds: Double) { state.withLock { $0.delays[path] = seconds } }

    var requests: [Request] { state.withLock { $0.requests } }
    func requests(_ path: String) -> [Request] { requests.filter { $0.path == path } }

    func stop() {
        let wasRunning = state.withLock { s in
            defer { s.stopped = true }
            return !s.stopped
        }
        guard wasRunning else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        finished.wait()
        close(listener)
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
        let separator = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        var contentLength = 0
        while true {
            if headEnd == nil, let end = Self.find(separator, in: data) {
                headEnd = end
                let head = String(decoding: data[..<end], as: UTF8.self)
                for line in head.split(separator: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    contentLength = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
            if let end = headEnd, data.count >= end + 4 + contentLength { break }
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
        let (status, answer, delay) = state.withLock { s in
            s.requests.append(Request(method: method, path: path, headers: headers, body: body, receivedAt: Date()))
            let (status, answer) = s.answers[path] ?? (404, Array(#"{"error":"not_found"}"#.utf8))
            return (status, answer, s.delays[path] ?? 0)
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

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for i in 0...(haystack.count - needle.count) where haystack[i] == needle[0] && Array(haystack[i..<(i + needle.count)]) == needle {
            return i
        }
        return nil
    }
}
