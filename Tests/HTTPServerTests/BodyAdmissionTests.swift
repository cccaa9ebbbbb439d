import Foundation
import Glibc
import XCTest
import GzipKit
@testable import HTTPServer

/// `HTTPHandler.screen`: a body is read only when the head allows it, within the route's
/// limit and the server's budget for bodies being received.
final class BodyAdmissionTests: XCTestCase {
    /// Refuses `/refuse…`, limits `/small…` to 10 bytes, reads the rest; echoes bodies.
    struct Screening: HTTPHandler {
        let screened = Counter()
        func handle(_ request: consuming HTTPRequest, responder: any HTTPResponder) {
            responder.respond(HTTPResponse(status: 200, contentType: "text/plain", body: "\(request.body.count)"))
        }
        func screen(_ head: HTTPRequestHead, remoteAddress: String) -> BodyAdmission {
            screened.add()
            if head.target.hasPrefix("/refuse") {
                return .refuse(ProblemResponse.make(status: 404, code: "not_found", detail: "No.", typePrefix: "urn:test:"))
            }
            return .read(limit: head.target.hasPrefix("/small") ? 10 : head.target.hasPrefix("/medium") ? 100 : nil)
        }
    }

    /// Screens `/later…` off the loop: each verdict waits for `gate`, then refuses
    /// `/later-refuse…`, limits `/later-small…` to 10 bytes and reads the rest; echoes bodies.
    struct Deferring: HTTPHandler {
        let gate = DispatchSemaphore(value: 0)
        func handle(_ request: consuming HTTPRequest, responder: any HTTPResponder) {
            responder.respond(HTTPResponse(status: 200, contentType: "text/plain", body: "\(request.body.count)"))
        }
        func screen(_ head: HTTPRequestHead, remoteAddress: String) -> BodyAdmission {
            guard head.target.hasPrefix("/later") else { return .read(limit: nil) }
            let (target, gate) = (head.target, gate)
            return .later { verdict in
                DispatchQueue.global().async {
                    gate.wait()
                    if target.hasPrefix("/later-refuse") {
                        verdict(.refuse(ProblemResponse.make(status: 404, code: "not_found", detail: "No.", typePrefix: "urn:test:")))
                    } else {
                        verdict(.read(limit: target.hasPrefix("/later-small") ? 10 : nil))
                    }
                }
            }
        }
    }

    final class Counter: @unchecked Sendable {
        private let lock = NSLock()
        private var n = 0
        func add() { lock.lock(); n += 1; lock.unlock() }
        var value: Int { lock.lock(); defer { lock.unlock() }; return n }
    }

    private var servers: [HTTPServer] = []
    override func tearDown() {
        for s in servers { s.shutdown() }
        servers = []
    }

    private func start(_ handler: some HTTPHandler, budget: Int = 256 << 20) throws -> HTTPServer {
        var c = HTTPServerConfiguration()
        c.port = 0
        c.eventLoops = 1
        c.shutdownDeadline = 2
        c.maxBufferedBodyBytes = budget
        let s = HTTPServer(configuration: c, handler: handler)
        try s.start()
        servers.append(s)
        return s
    }

    func testRefusedHeadsAreAnsweredWithoutTheBodyAndClose() throws {
        let handler = Screening()
        let server = try start(handler)
        let client = try RawClient(port: server.port)
        client.send("POST /refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 4000000\r\n\r\n")
        let r = client.readResponse()
        XCTAssertEqual(r?.status, 404)
        XCTAssertEqual(r?.headers.first { $0.0.lowercased() == "connection" }?.1, "close")
        // A request without a body is not screened.
        let plain = try RawClient(port: server.port)
        plain.send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(plain.readResponse()?.status, 200)
        XCTAssertEqual(handler.screened.value, 1)
    }

    func testTheRoutesLimitAppliesToLengthChunkedAndGzip() throws {
        let server = try start(Screening())
        let a = try RawClient(port: server.port)
        a.send("POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n")
        XCTAssertEqual(a.readResponse()?.status, 413)
        let b = try RawClient(port: server.port)
        b.send("POST /small HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\n")
        XCTAssertEqual(b.readResponse()?.status, 413)
        let c = try RawClient(port: server.port)
        c.send("POST /small HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n0123456789")
        let ok = c.readResponse()
        XCTAssertEqual(ok?.status, 200)
        XCTAssertEqual(ok.map { String(decoding: $0.body, as: UTF8.self) }, "10")
        // A thousand bytes gzipped are a few dozen on the wire and over the limit inflated.
        let gz = try Gzip.compress([UInt8](repeating: 97, count: 1000))
        XCTAssertLessThan(gz.count, 100)
        let d = try RawClient(port: server.port)
        d.send("POST /medium HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: \(gz.count)\r\n\r\n")
        d.send(gz)
        XCTAssertEqual(d.readResponse()?.status, 413)
    }

    func testTheBodyBudgetRefusesPastItAndIsGivenBack() throws {
        let server = try start(Screening(), budget: 300_000)
        let held = try RawClient(port: server.port)
        held.send("POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
        held.send([UInt8](repeating: 65, count: 250_000))
        let deadline = Date().addingTimeInterval(3)
        while server.core.bufferedBodyBytes.load(ordering: .relaxed) < 250_000 && Date() < deadline { usleep(5_000) }
        XCTAssertGreaterThanOrEqual(server.core.bufferedBodyBytes.load(ordering: .relaxed), 250_000)
        // The next body passes the budget as it grows: 503, Retry-After, closed.
        let next = try RawClient(port: server.port)
        next.send("POST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n")
        next.send([UInt8](repeating: 66, count: 200_000))
        let r = next.readResponse()
        XCTAssertEqual(r?.status, 503)
        XCTAssertEqual(r?.headers.first { $0.0 == "Retry-After" }?.1, "1")
        // Closing the first gives its share back; a body then fits again.
        held.abort()
        let back = Date().addingTimeInterval(3)
        while server.core.bufferedBodyBytes.load(ordering: .relaxed) != 0 && Date() < back { usleep(5_000) }
        XCTAssertEqual(server.core.bufferedBodyBytes.load(ordering: .relaxed), 0)
        let after = try RawClient(port: server.port)
        after.send("POST /c HTTP/1.1\r\nHost: x\r\nContent-Length: 200000\r\n\r\n")
        after.send([UInt8](repeating: 67, count: 200_000))
        XCTAssertEqual(after.readResponse()?.status, 200)
        XCTAssertEqual(server.core.bufferedBodyBytes.load(ordering: .relaxed), 0, "a finished body holds nothing")
    }

    /// A head screened off the loop is refused without its body once the verdict comes; the
    /// loop (the only one) serves other connections meanwhile.
    func testHeadsScreenedLaterAreRefusedWithoutTheBody() throws {
        let handler = Deferring()
        let server = try start(handler)
        let refused = try RawClient(port: server.port)
        refused.send("POST /later-refuse HTTP/1.1\r\nHost: x\r\nContent-Length: 4000000\r\n\r\n")
        let other = try RawClient(port: server.port)
        other.send("GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(other.readResponse()?.status, 200, "answered while the verdict is pending")
        handler.gate.signal()
        let r = refused.readResponse()
        XCTAssertEqual(r?.status, 404)
        XCTAssertEqual(r?.header("Connection"), "close")
    }

    /// A head screened off the loop, then admitted: what arrived before the verdict and after
    /// it makes the body, and a request pipelined behind it is answered too; the verdict's
    /// limit applies.
    func testHeadsScreenedLaterAreReadOnceAdmitted() throws {
        let handler = Deferring()
        let server = try start(handler)
        let c = try RawClient(port: server.port)
        c.send("POST /later HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n01234")
        usleep(50_000)
        handler.gate.signal()
        c.send("56789GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
        let first = c.readResponse()
        XCTAssertEqual(first?.status, 200)
        XCTAssertEqual(first?.text, "10")
        XCTAssertEqual(c.readResponse()?.status, 200)
        let small = try RawClient(port: server.port)
        small.send("POST /later-small HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n")
        handler.gate.signal()
        XCTAssertEqual(small.readResponse()?.status, 413)
    }
}
