import Glibc
import XCTest

/// A tiny blocking HTTP/1.1 client on a raw socket, for the real-socket tests.
final class RawClient {
    struct Response {
        var status: Int
        var headers: [(String, String)]
        var body: [UInt8]
        func header(_ name: String) -> String? {
            headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
        var text: String { String(decoding: body, as: UTF8.self) }
    }

    private(set) var fd: Int32
    private var buffer: [UInt8] = []

    /// Connects to 127.0.0.1:`port` from the loopback address `source`.
    init(port: Int, timeout: Double = 2, from source: String = "127.0.0.1") throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var local = sockaddr_in()
        local.sin_family = sa_family_t(AF_INET)
        local.sin_addr.s_addr = inet_addr(source)
        let bound = withUnsafePointer(to: &local) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { close(fd); throw POSIXErrorCode(rawValue: errno).map { POSIXError($0) } ?? POSIXError(.EIO) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { close(fd); throw POSIXErrorCode(rawValue: errno).map { POSIXError($0) } ?? POSIXError(.EIO) }
        setTimeout(timeout)
    }

    deinit { if fd >= 0 { close(fd) } }

    /// Half-closes: the server sees end of input, the client can still read.
    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    /// Closes with a reset instead of an orderly close.
    func abort() {
        var off = linger(l_onoff: 1, l_linger: 0)
        setsockopt(fd, SOL_SOCKET, SO_LINGER, &off, socklen_t(MemoryLayout<linger>.size))
        close(fd)
        fd = -1
    }

    func setTimeout(_ seconds: Double) {
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1e6))
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    func send(_ text: String) { send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) {
        var off = 0
        while off < bytes.count {
            let n = bytes.withUnsafeBytes { Glibc.send(fd, $0.baseAddress! + off, $0.count - off, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            off += n
        }
    }

    /// Reads more bytes into the buffer; false on EOF, error or timeout.
    @discardableResult
    private func fill() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { return false }
        buffer += chunk[0..<n]
        return true
    }

    /// True when the server closed the connection (EOF or reset) before `timeout`, with no data.
    func isClosedByPeer() -> Bool {
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, 0)
        return n == 0 || (n < 0 && errno == ECONNRESET)
    }

    /// Reads one response (Content-Length framed; interim 1xx returned as-is).
    func readResponse(isHead: Bool = false) -> Response? {
        var headEnd: Int? = nil
        while headEnd == nil {
            if let r = findHeadEnd() { headEnd = r; break }
            if !fill() { return nil }
        }
        let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        var lines = head.components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst()
        let parts = statusLine.split(separator: " ")
        guard parts.count >= 2, let status = Int(parts[1]) else { return nil }
        var headers: [(String, String)] = []
        for line in lines where !line.isEmpty {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers.append((String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)))
        }
        buffer.removeFirst(headEnd! + 4)
        var response = Response(status: status, headers: headers, body: [])
        if status < 200 || status == 204 || status == 304 || isHead { return response }
        let length = Int(response.header("Content-Length") ?? "0") ?? 0
        while buffer.count < length { if !fill() { return nil } }
        response.body = Array(buffer[..<length])
        buffer.removeFirst(length)
        return response
    }

    private func findHeadEnd() -> Int? {
        guard buffer.count >= 4 else { return nil }
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            return i
        }
        return nil
    }
}
