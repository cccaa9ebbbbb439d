import Foundation
import Glibc
import LedgerModel
import LedgerServerTesting
import XCTest

/// A `kidledger-server serve` child process on an ephemeral loopback port. Its stdout and
/// stderr go to a log file (read back by `logTail` when a test fails).
final class ServerProcess: @unchecked Sendable {
    let process = Process()
    let port: Int
    let logPath: String

    init(binary: URL, dataDir: String, arguments: [String] = [], environment: [String: String] = [:],
         startTimeout: Double = 15) throws {
        logPath = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-server-\(UUID().uuidString).log").path
        guard FileManager.default.createFile(atPath: logPath, contents: nil) else {
            throw NSError(domain: "cannot create \(logPath)", code: 1)
        }
        let log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        defer { try? log.close() }
        process.executableURL = binary
        process.arguments = ["serve", "--host", "127.0.0.1", "--port", "0", "--data-dir", dataDir] + arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = log
        process.standardError = log
        try process.run()
        var found: Int?
        let deadline = Date().addingTimeInterval(startTimeout)
        while found == nil, Date() < deadline, process.isRunning {
            for line in (try? String(contentsOfFile: logPath, encoding: .utf8))?.split(separator: "\n") ?? [] {
                if let v = try? JSONValue.parse(String(line)), v["event"]?.stringValue == "listening", let p = v["port"]?.intValue {
                    found = Int(p)
                }
            }
            if found == nil { usleep(10_000) }
        }
        guard let found else {
            let tail = ServerProcess.tail(logPath)
            if process.isRunning { kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
            throw NSError(domain: "kidledger-server did not start", code: 1, userInfo: [NSLocalizedDescriptionKey: tail])
        }
        port = found
    }

    deinit { try? FileManager.default.removeItem(atPath: logPath) }

    var isRunning: Bool { process.isRunning }

    /// Kills the process with SIGKILL and reaps it. Reaped here rather than with
    /// `waitUntilExit`, which sometimes never sees a child's exit.
    func kill9() {
        guard !reaped, process.isRunning else { return }
        reaped = true
        let pid = process.processIdentifier
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
    private var reaped = false

    /// The last lines the server wrote.
    var logTail: String { ServerProcess.tail(logPath) }

    private static func tail(_ path: String, lines: Int = 80) -> String {
        let text = (try? String(contentsOfFile: path, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").suffix(lines).joined(separator: "\n")
    }

    /// The `kidledger-server` built next to the test bundle.
    static func binary() throws -> URL {
        let candidates = [Bundle.main.executableURL, URL(fileURLWithPath: CommandLine.arguments[0])].compactMap { $0 }
        for c in candidates {
            var dir = c.deletingLastPathComponent()
            for _ in 0..<4 {
                let bin = dir.appendingPathComponent("kidledger-server")
                if FileManager.default.isExecutableFile(atPath: bin.path) { return bin }
                dir = dir.deletingLastPathComponent()
            }
        }
        throw XCTSkip("kidledger-server binary not built next to the tests (run swift build first)")
    }
}

/// A blocking HTTP/1.1 client for servers in other processes: one loopback connection per
/// request (`Connection: close`), and a hard deadline, so a server that never answers shows
/// as a reply with `failure` set instead of a hung test.
struct LoopbackHTTP: Sendable {
    let port: Int

    func call(_ method: String, _ path: String, token: String? = nil, json: JSONValue? = nil,
              headers: [String: String] = [:], timeout: Double = 10) -> TestServer.Reply {
        let deadline = Date().addingTimeInterval(timeout)
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { return .failed("socket: \(String(cString: strerror(errno)))") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { return .failed("connect: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))

        let body = json.map { $0.serialized() } ?? []
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n"
        if let token { head += "Authorization: Bearer \(token)\r\n" }
        if json != nil { head += "Content-Type: application/json\r\n" }
        if !body.isEmpty || method == "POST" || method == "PUT" || method == "PATCH" { head += "Content-Length: \(body.count)\r\n" }
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        let request = Array((head + "\r\n").utf8) + body
        var sent = 0
        while sent < request.count {
            guard LoopbackHTTP.setTimeout(fd, SO_SNDTIMEO, until: deadline) else { return .failed("timed out sending") }
            let n = request.withUnsafeBytes { send(fd, $0.baseAddress! + sent, $0.count - sent, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return .failed("send: \(String(cString: strerror(errno)))") }
            sent += n
        }

        var buffer: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        var parsed: (status: Int, headers: [String: String], bodyStart: Int)?
        while true {
            if parsed == nil, let p = LoopbackHTTP.parseHead(buffer) { parsed = p }
            if let p = parsed, let length = p.headers["content-length"].flatMap({ Int($0) }), buffer.count - p.bodyStart >= length {
                return TestServer.Reply(status: p.status, headers: p.headers, body: Data(buffer[p.bodyStart..<(p.bodyStart + length)]))
            }
            guard LoopbackHTTP.setTimeout(fd, SO_RCVTIMEO, until: deadline) else {
                return .failed("no answer within \(timeout) s")
            }
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { buffer += chunk[0..<n]; continue }
            if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) { continue }
            // End of input: a complete answer without Content-Length ends here.
            if let p = parsed, p.headers["content-length"] == nil {
                return TestServer.Reply(status: p.status, headers: p.headers, body: Data(buffer[p.bodyStart...]))
            }
            return .failed(n == 0 ? "connection closed before a complete answer" : "recv: \(String(cString: strerror(errno)))")
        }
    }

    /// Sets the socket's send or receive timeout to what is left until `deadline`; false when nothing is.
    private static func setTimeout(_ fd: Int32, _ option: Int32, until deadline: Date) -> Bool {
        let left = deadline.timeIntervalSinceNow
        guard left > 0 else { return false }
        var tv = timeval(tv_sec: Int(left), tv_usec: max(1, Int((left - Double(Int(left))) * 1e6)))
        setsockopt(fd, SOL_SOCKET, option, &tv, socklen_t(MemoryLayout<timeval>.size))
        return true
    }

    /// Status, headers (names lowercased) and where the body starts, once the head is complete.
    private static func parseHead(_ buffer: [UInt8]) -> (status: Int, headers: [String: String], bodyStart: Int)? {
        guard buffer.count >= 4 else { return nil }
        var end: Int?
        for i in 0...(buffer.count - 4) where buffer[i] == 13 && buffer[i + 1] == 10 && buffer[i + 2] == 13 && buffer[i + 3] == 10 {
            end = i
            break
        }
        guard let end else { return nil }
        var lines = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusLine = lines.removeFirst().split(separator: " ")
        guard statusLine.count >= 2, let status = Int(statusLine[1]) else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return (status, headers, end + 4)
    }
}

extension TestServer.Reply {
    /// No answer (status 0): why, for the test's message.
    static func failed(_ why: String) -> TestServer.Reply {
        TestServer.Reply(status: 0, headers: ["x-client-failure": why], body: Data())
    }

    /// Why no answer arrived, when none did.
    var failure: String? { status == 0 ? header("x-client-failure") ?? "no answer" : nil }
}
