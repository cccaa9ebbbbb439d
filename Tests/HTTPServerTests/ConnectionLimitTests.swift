import Foundation
import Glibc
import Synchronization
import XCTest
@testable import HTTPServer

/// Connection admission: a cap per client address, fresh connections that send nothing
/// closed at the header timeout, the default connection limit below the descriptor
/// limit, and every refusal counted and reported (rate-limited).
extension HTTPServerTests {
    /// Waits until the server counts `n` open connections.
    private func waitForOpen(_ server: HTTPServer, _ n: Int, file: StaticString = #filePath, line: UInt = #line) {
        let end = Date().addingTimeInterval(5)
        while server.openConnections != n && Date() < end { usleep(2_000) }
        XCTAssertEqual(server.openConnections, n, file: file, line: line)
    }

    func testNinthConnectionFromOneAddressIsRefusedWhileAnotherAddressIsServed() throws {
        let reports = Mutex<[ConnectionRefusalReport]>([])
        let server = try start {
            $0.maxConnectionsPerAddress = 8
            $0.connectionsRefused = { report in reports.withLock { $0.append(report) } }
        }
        var idle: [RawClient] = []
        for _ in 0..<8 { idle.append(try RawClient(port: server.port)) }
        waitForOpen(server, 8)

        let ninth = try RawClient(port: server.port)
        let refused = try XCTUnwrap(ninth.readResponse())
        XCTAssertEqual(refused.status, 503)
        XCTAssertEqual(refused.header("Retry-After"), "1")
        XCTAssertTrue(refused.text.contains("service_unavailable"))
        XCTAssertTrue(ninth.isClosedByPeer())

        let other = try RawClient(port: server.port, from: "127.0.0.2")
        other.send("GET /other HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(other.readResponse()?.text, "/other:")

        XCTAssertEqual(server.refusedConnections[.perAddress], 1)
        XCTAssertEqual(server.refusedConnections[.maxConnections], nil)
        let first = try XCTUnwrap(reports.withLock { $0.first }, "the first refusal is reported at once")
        XCTAssertEqual(first.counts, [.perAddress: 1])
        XCTAssertEqual(first.lastAddress[.perAddress], "127.0.0.1")

        // A slot freed by a closing connection is available again.
        idle.removeLast()
        waitForOpen(server, 8)
        let again = try RawClient(port: server.port)
        again.send("GET /again HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(again.readResponse()?.text, "/again:")
    }

    func testAddressLimitDoesNotApplyToExemptPeersOrWhenOff() throws {
        for configure: (inout HTTPServerConfiguration) -> Void in [
            { $0.maxConnectionsPerAddress = 2; $0.exemptFromAddressLimit = { $0 == "127.0.0.1" } },
            { $0.maxConnectionsPerAddress = 0 },
        ] {
            let server = try start(configure)
            let clients = try (0..<4).map { _ in try RawClient(port: server.port) }
            for (i, c) in clients.enumerated() {
                c.send("GET /\(i) HTTP/1.1\r\nHost: x\r\n\r\n")
                XCTAssertEqual(c.readResponse()?.text, "/\(i):")
            }
            XCTAssertNil(server.refusedConnections[.perAddress])
        }
    }

    func testFreshConnectionThatSendsNothingIsClosedAtTheHeaderTimeout() throws {
        let server = try start {
            $0.headerTimeout = 0.3
            $0.idleTimeout = 30
        }
        let silent = try RawClient(port: server.port)
        let started = Date()
        XCTAssertTrue(silent.isClosedByPeer(), "closed without an answer")
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.5)
        waitForOpen(server, 0)

        // After a response, the keep-alive connection waits for the idle timeout instead.
        let client = try RawClient(port: server.port)
        client.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponse()?.text, "/a:")
        usleep(600_000)
        client.send("GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponse()?.text, "/b:")
    }

    func testRefusalsAreCountedByReasonAndReportedAtMostOncePerInterval() {
        let reports = Mutex<[ConnectionRefusalReport]>([])
        let admission = ConnectionAdmission(perAddressLimit: 1, reportInterval: 10,
                                            report: { r in reports.withLock { $0.append(r) } }, now: 100)
        admission.refused(.perAddress, address: "192.0.2.1", now: 100)
        XCTAssertEqual(reports.withLock { $0.count }, 1, "the first refusal is reported at once")
        for t in 0..<50 { admission.refused(t % 2 == 0 ? .perAddress : .maxConnections, address: "192.0.2.\(t % 7)", now: 101 + Double(t) / 10) }
        admission.flush(now: 109.9)
        XCTAssertEqual(reports.withLock { $0.count }, 1, "nothing more within the interval")
        admission.flush(now: 110)
        let all = reports.withLock { $0 }
        XCTAssertEqual(all.count, 2, "the rest is reported once the interval has passed, without a further refusal")
        XCTAssertEqual(all[1].counts, [.perAddress: 25, .maxConnections: 25])
        XCTAssertEqual(all[1].lastAddress[.maxConnections], "192.0.2.0")
        XCTAssertEqual(all[1].seconds, 10, accuracy: 0.001)
        admission.flush(now: 200)
        XCTAssertEqual(reports.withLock { $0.count }, 2, "no empty reports")
        // When the server stops, what is waiting is reported at once.
        admission.refused(.outOfDescriptors, address: nil, now: 201)
        admission.refused(.outOfDescriptors, address: nil, now: 202)
        admission.flush(now: 202.5, final: true)
        let final = reports.withLock { $0 }
        XCTAssertEqual(final.count, 4)
        XCTAssertEqual(final.last?.counts, [.outOfDescriptors: 1])
        XCTAssertEqual(admission.totals, [.perAddress: 26, .maxConnections: 25, .outOfDescriptors: 2])
        XCTAssertEqual(final.reduce(0) { $0 + $1.counts.values.reduce(0, +) }, 53, "every refusal is in one report")
    }

    func testAdmissionCountsPerClientAndReleases() throws {
        let admission = ConnectionAdmission(perAddressLimit: 2, reportInterval: 10, report: nil, now: 0)
        let a = try XCTUnwrap(PeerKey(Self.storage("192.0.2.1")))
        XCTAssertEqual(PeerKey(Self.storage("::ffff:192.0.2.1")), a, "IPv4-mapped counts as IPv4")
        XCTAssertTrue(admission.admit(a))
        XCTAssertTrue(admission.admit(PeerKey(Self.storage("::ffff:192.0.2.1"))!))
        XCTAssertFalse(admission.admit(a))
        XCTAssertTrue(admission.admit(PeerKey(Self.storage("192.0.2.2"))!))
        admission.release(a)
        XCTAssertEqual(admission.openCount(a), 1)
        XCTAssertTrue(admission.admit(a))
        // IPv6: one /64 is one client.
        let v6 = try XCTUnwrap(PeerKey(Self.storage("2001:db8:1:2::1")))
        XCTAssertEqual(PeerKey(Self.storage("2001:db8:1:2:ffff:1:2:3")), v6)
        XCTAssertNotEqual(PeerKey(Self.storage("2001:db8:1:3::1")), v6)
        XCTAssertNotEqual(PeerKey(Self.storage("::1")), PeerKey(Self.storage("0.0.0.1")))
    }

    private static func storage(_ text: String) -> sockaddr_storage {
        var storage = sockaddr_storage()
        withUnsafeMutablePointer(to: &storage) { p in
            if text.contains(":") {
                p.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    $0.pointee.sin6_family = sa_family_t(AF_INET6)
                    _ = inet_pton(AF_INET6, text, &$0.pointee.sin6_addr)
                }
            } else {
                p.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    $0.pointee.sin_family = sa_family_t(AF_INET)
                    _ = inet_pton(AF_INET, text, &$0.pointee.sin_addr)
                }
            }
        }
        return storage
    }

    func testDefaultConnectionLimitLeavesDescriptorsForTheDatabase() {
        XCTAssertEqual(HTTPServerConfiguration.defaultMaxConnections(descriptorLimit: 1024), 768)
        XCTAssertEqual(HTTPServerConfiguration.defaultMaxConnections(descriptorLimit: 20_000), 18_000)
        XCTAssertEqual(HTTPServerConfiguration.defaultMaxConnections(descriptorLimit: 1 << 20), (1 << 20) - (1 << 20) / 10)
        XCTAssertEqual(HTTPServerConfiguration.defaultMaxConnections(descriptorLimit: 100), 16)
        let limit = HTTPServerConfiguration.descriptorLimit
        let config = HTTPServerConfiguration()
        XCTAssertEqual(config.maxConnections, HTTPServerConfiguration.defaultMaxConnections(descriptorLimit: limit))
        XCTAssertLessThanOrEqual(config.maxConnections, limit - 256)
        XCTAssertEqual(config.maxConnectionsPerAddress, 256)
    }
}
