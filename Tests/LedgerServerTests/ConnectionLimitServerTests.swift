import Foundation
import Glibc
import HTTPServer
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// The per-address connection cap as the server runs it: refusals are logged (a line per
/// report, not per refusal) and counted in `/metrics`; the flag and variable set the cap.
final class ConnectionLimitServerTests: XCTestCase {
    /// A connection from the loopback address `source`; -1 on failure.
    private func connect(_ port: Int, from source: String) -> Int32 {
        LoopbackSocket.connect(port, from: source, timeout: 2)
    }

    /// Sends `request` (if any) and reads until the server closes; the text received.
    private func exchange(_ fd: Int32, _ request: String? = nil) -> String {
        if let request { _ = request.withCString { send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) } }
        var out: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { break }
            out += chunk[0..<n]
        }
        close(fd)
        return String(decoding: out, as: UTF8.self)
    }

    func testRefusalsFromOneAddressAreLoggedRateLimitedAndCounted() throws {
        let s = try TestServer(.live) {
            $0.logging = true
            $0.logLevel = "warning"
            $0.http.maxConnectionsPerAddress = 2
            $0.http.refusalReportInterval = 0.3
        }
        let path = s.dataDirectory + "-stdout.log"
        fflush(nil)
        let saved = dup(1)
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        dup2(fd, 1)
        close(fd)
        var restored = false
        func restoreStdout() {
            guard !restored else { return }
            restored = true
            s.app.services.logger.flush()
            fflush(nil)
            dup2(saved, 1)
            close(saved)
        }
        defer { restoreStdout(); s.stop(); try? FileManager.default.removeItem(atPath: path) }

        let held = (0..<2).map { _ in connect(s.app.port, from: "127.0.0.1") }
        defer { for fd in held { close(fd) } }
        let end = Date().addingTimeInterval(5)
        while s.app.services.connectionCount() < 2 && Date() < end { usleep(2_000) }
        for i in 0..<5 {
            let answer = exchange(connect(s.app.port, from: "127.0.0.1"))
            XCTAssertTrue(answer.hasPrefix("HTTP/1.1 503 "), "refusal \(i): \(answer)")
        }
        // The event loops report what is left once the interval has passed.
        Thread.sleep(forTimeInterval: 1.5)
        let metrics = exchange(connect(s.app.port, from: "127.0.0.2"), "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        XCTAssertTrue(metrics.hasPrefix("HTTP/1.1 200 "), metrics)
        XCTAssertTrue(metrics.contains("kidledger_connections_refused_total{reason=\"per_address\"} 5\n"), metrics)
        XCTAssertTrue(metrics.contains("kidledger_connections_refused_total{reason=\"max_connections\"} 0\n"), metrics)
        restoreStdout()

        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
            .compactMap { try? JSONValue.parse(String($0)) }.filter { $0["event"]?.stringValue == "connections_refused" }
        XCTAssertEqual(lines.count, 2, "the first refusal at once, the other four in one line: \(lines)")
        XCTAssertEqual(lines.first?["refused"]?["per_address"]?.intValue, 1)
        XCTAssertEqual(lines.map { $0["refused"]?["per_address"]?.intValue ?? 0 }.reduce(0, +), 5)
        XCTAssertEqual(lines.last?["lastAddress"]?["per_address"]?.stringValue, "127.0.0.1")
    }

    /// `--max-connections-per-address` and `KIDLEDGER_MAX_CONNECTIONS_PER_ADDRESS` set the
    /// cap; the default connection limit follows the raised descriptor limit.
    func testFlagAndVariableSetTheCap() throws {
        let binary = try ServerProcess.binary()
        var hard = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &hard)
        let expectedMax = HTTPServerConfiguration.defaultMaxConnections(descriptorLimit: Int(min(hard.rlim_max, 1 << 20)))
        for (arguments, environment, cap) in [([String](), [String: String](), 256),
                                              (["--max-connections-per-address", "3"], [:], 3),
                                              ([], ["KIDLEDGER_MAX_CONNECTIONS_PER_ADDRESS": "7"], 7)] {
            let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-cap-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: dataDir) }
            let process = Process()
            process.executableURL = binary
            process.arguments = ["serve", "--port", "0", "--data-dir", dataDir] + arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            defer { process.terminate(); process.waitUntilExit() }
            var buffer = Data()
            var listening: JSONValue?
            while listening == nil {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                listening = String(decoding: buffer, as: UTF8.self).split(separator: "\n")
                    .compactMap { try? JSONValue.parse(String($0)) }.first { $0["event"]?.stringValue == "listening" }
            }
            XCTAssertEqual(listening?["maxConnectionsPerAddress"]?.intValue, Int64(cap), "\(arguments) \(environment)")
            XCTAssertEqual(listening?["maxConnections"]?.intValue, Int64(expectedMax))
        }
    }
}
