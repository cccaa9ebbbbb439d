import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// A minimal HTTP/1.1 server on 127.0.0.1 and an ephemeral port, for key set fetches in
/// tests: one request per connection, every path answered with the same status and body,
/// request paths recorded.
final class LoopbackHTTPServer: Sendable {
    let port: UInt16
    private let listener: Int32
    private let state: Mutex<(status: Int, body: [UInt8], requests: [String], stopped: Bool)>
    private let finished = DispatchSemaphore(value: 0)

    init(status: Int = 200, body: [UInt8]) throws {
        state = Mutex((status, body, [], false))
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
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
        let thread = Thread { [self] in serve() }
        thread.start()
    }

    func url(_ path: String) -> URL { URL(string: "http://127.0.0.1:\(port)\(path)")! }

    /// The request targets received so far.
    var requests: [String] { state.withLock { $0.requests } }

    func respond(status: Int, body: [UInt8]) { state.withLock { $0.status = status; $0.body = body } }

    func stop() {
        let wasRunning = state.withLock { state in
            defer { state.stopped = true }
            return !state.stopped
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
        var head: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !head.ends(with: Array("\r\n\r\n".utf8)) && head.count < 65_536 {
            let count = read(client, &buffer, buffer.count)
            guard count > 0 else { return }
            head += buffer[0..<count]
        }
        let requestLine = String(decoding: head.prefix { $0 != 13 }, as: UTF8.self).split(separator: " ")
        let (status, body) = state.withLock { state in
            state.requests.append(requestLine.count > 1 ? String(requestLine[1]) : "")
            return (state.status, state.body)
        }
        let response = Array("HTTP/1.1 \(status) X\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body
        var sent = 0
        while sent < response.count {
            let count = response[sent...].withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
            guard count > 0 else { return }
            sent += count
        }
    }
}

private extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}
