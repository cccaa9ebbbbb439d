import Dispatch
import Foundation
import GzipKit
import Synchronization
import XCTest
@testable import HTTPServer

final class HTTPServerTests: XCTestCase {
    private var servers: [HTTPServer] = []

    override func tearDown() {
        for server in servers { server.shutdown() }
        servers = []
        super.tearDown()
    }

    func start(_ configure: (inout HTTPServerConfiguration) -> Void = { _ in },
                       handler: @escaping @Sendable (HTTPRequest, any HTTPResponder) -> Void = HTTPServerTests.echo) throws -> HTTPServer {
        var config = HTTPServerConfiguration()
        config.port = 0
        config.eventLoops = 2
        config.shutdownDeadline = 2
        configure(&config)
        let server = HTTPServer(configuration: config, handler: ClosureHandler(handler))
        try server.start()
        servers.append(server)
        return server
    }

    /// Answers with the request path and body.
    static let echo: @Sendable (HTTPRequest, any HTTPResponder) -> Void = { request, responder in
        var response = HTTPResponse(status: 200, contentType: "text/plain", body: request.path + ":")
        response.body += request.body
        responder.respond(response)
    }

    func testKeepAliveReusesConnection() throws {
        let server = try start()
        let client = try RawClient(port: server.port)
        for i in 0..<3 {
            client.send("GET /k\(i) HTTP/1.1\r\nHost: x\r\n\r\n")
            let r = try XCTUnwrap(client.readResponse())
            XCTAssertEqual(r.status, 200)
            XCTAssertEqual(r.text, "/k\(i):")
            XCTAssertNil(r.header("Connection"))
            XCTAssertNotNil(r.header("Date"))
            XCTAssertEqual(r.header("Server"), "HTTPServer")
        }
        XCTAssertEqual(server.openConnections, 1)
    }

    func testPipelinedResponsesStayInOrder() throws {
        let server = try start(handler: { request, responder in
            if request.path == "/slow" {
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.2) {
                    responder.respond(HTTPResponse(status: 200, contentType: "text/plain", body: "slow"))
                }
            } else {
                responder.respond(HTTPResponse(status: 200, contentType: "text/plain", body: "fast" + request.path))
            }
        })
        let client = try RawClient(port: server.port)
        client.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponse()?.text, "slow")
        XCTAssertEqual(client.readResponse()?.text, "fast/a")
        XCTAssertEqual(client.readResponse()?.text, "fast/b")
    }

    /// Work another thread hands back with `execute` runs on the thread that handled the
    /// request (the connection's event loop), and the answer it gives arrives in order.
    func testExecuteRunsOnTheConnectionsLoop() throws {
        let server = try start(handler: { request, responder in
            let loopThread = UInt(pthread_self())
            DispatchQueue.global().async {
                let elsewhere = UInt(pthread_self())
                responder.execute {
                    let here = UInt(pthread_self())
                    let text = here == loopThread && here != elsewhere ? "on the loop" : "elsewhere"
                    responder.respond(HTTPResponse(status: 200, contentType: "text/plain", body: text + request.path))
                }
            }
        })
        let client = try RawClient(port: server.port)
        client.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponse()?.text, "on the loop/a")
        XCTAssertEqual(client.readResponse()?.text, "on the loop/b")
    }

    /// Answers from other threads wake a loop that waits, and a loop that is awake when
    /// they arrive (it is not woken then) runs them before it waits again: none is left
    /// for the loop's next timeout (up to a second), whether it comes alone to an idle
    /// loop or in bursts while the loop writes earlier answers.
    func testAnswersFromOtherThreadsNeverWaitForTheLoopsTimeout() throws {
        let server = try start(handler: { request, responder in
            DispatchQueue.global().async {
                responder.respond(HTTPResponse(status: 200, contentType: "text/plain", body: "elsewhere" + request.path))
            }
        })
        // Alone: each answer comes to a loop that waits in epoll_wait.
        let single = try RawClient(port: server.port)
        var slowest = 0.0
        for i in 0..<60 {
            let started = Date()
            single.send("GET /s\(i) HTTP/1.1\r\nHost: x\r\n\r\n")
            XCTAssertEqual(single.readResponse()?.text, "elsewhere/s\(i)")
            slowest = max(slowest, Date().timeIntervalSince(started))
        }
        // In bursts: pipelined requests on connections of both loops, answered in any order.
        let clients = try (0..<4).map { _ in try RawClient(port: server.port) }
        let started = Date()
        for round in 0..<20 {
            for (c, client) in clients.enumerated() {
                client.send((0..<16).map { "GET /b\(round)-\(c)-\($0) HTTP/1.1\r\nHost: x\r\n\r\n" }.joined())
            }
            for (c, client) in clients.enumerated() {
                for i in 0..<16 { XCTAssertEqual(client.readResponse()?.text, "elsewhere/b\(round)-\(c)-\(i)") }
            }
        }
        let bursts = Date().timeIntervalSince(started)
        // An answer left for the loop's timeout takes about a second; sixty of them in a row
        // (or one per burst) would take a minute. Generous for a busy machine, and still far
        // below what a lost wake-up costs.
        XCTAssertLessThan(slowest, 0.9)
        XCTAssertLessThan(bursts, 10)
    }

    func testHeaderTimeoutSends408EvenWhenTrickled() throws {
        let server = try start { $0.headerTimeout = 0.3 }
        let client = try RawClient(port: server.port)
        let started = Date()
        client.send("GET / HTTP/1.1\r\nHost: x\r\n")
        for _ in 0..<3 {
            usleep(100_000)
            client.send("X: y\r\n")
        }
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.status, 408)
        XCTAssertEqual(r.header("Connection"), "close")
        XCTAssertEqual(r.header("Content-Type"), "application/problem+json")
        XCTAssertTrue(r.text.contains("\"code\":\"request_timeout\""))
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.0)
        XCTAssertTrue(client.isClosedByPeer())
    }

    func testIdleConnectionClosedSilently() throws {
        let server = try start { $0.idleTimeout = 0.2 }
        let client = try RawClient(port: server.port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponse()?.status, 200)
        XCTAssertTrue(client.isClosedByPeer())
        usleep(50_000)
        XCTAssertEqual(server.openConnections, 0)
    }

    func testHeadTooLarge431() throws {
        let server = try start { $0.maxHeadBytes = 1024 }
        let client = try RawClient(port: server.port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\nX: " + String(repeating: "a", count: 2000) + "\r\n\r\n")
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.status, 431)
        XCTAssertTrue(r.text.contains("header_too_large"))
        XCTAssertTrue(client.isClosedByPeer())
    }

    func testBodyTooLargeByContentLengthAnsweredAtOnce() throws {
        let server = try start { $0.maxBodyBytes = 100 }
        let client = try RawClient(port: server.port)
        client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n")
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.status, 413)
        XCTAssertTrue(r.text.contains("\"code\":\"payload_too_large\""))
    }

    func testBodyTooLargeChunked() throws {
        let server = try start { $0.maxBodyBytes = 100 }
        let client = try RawClient(port: server.port)
        client.send("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        for _ in 0..<3 { client.send("40\r\n" + String(repeating: "x", count: 64) + "\r\n") }
        XCTAssertEqual(client.readResponse()?.status, 413)
    }

    func testChunkedBodyWithTrailers() throws {
        let server = try start()
        let client = try RawClient(port: server.port)
        client.send("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;x=y\r\n!\r\n0\r\nT: v\r\n\r\n")
        XCTAssertEqual(client.readResponse()?.text, "/c:hello!")
    }

    func testBadRequestIsProblemJSONAndCloses() throws {
        let server = try start { $0.problemTypePrefix = "urn:example:" }
        let client = try RawClient(port: server.port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n")
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.status, 400)
        XCTAssertTrue(r.text.hasPrefix("{\"type\":\"urn:example:bad_request\",\"title\":\"Bad Request\",\"status\":400,"))
        XCTAssertEqual(r.header("Connection"), "close")
        XCTAssertTrue(client.isClosedByPeer())
    }

    func testGzipResponse() throws {
        let payload = String(repeating: "{\"k\":\"value\"},", count: 200)
        let server = try start(handler: { _, responder in
            responder.respond(HTTPResponse(status: 200, contentType: "application/json", body: payload))
        })
        let client = try RawClient(port: server.port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: br, gzip;q=0.8\r\n\r\n")
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.header("Content-Encoding"), "gzip")
        XCTAssertEqual(r.header("Vary"), "Accept-Encoding")
        XCTAssertLessThan(r.body.count, payload.utf8.count)
        XCTAssertEqual(try Gzip.decompress(r.body, limit: 1 << 20), Array(payload.utf8))

        client.send("GET / HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip;q=0, *\r\n\r\n")
        let plain = try XCTUnwrap(client.readResponse())
        XCTAssertNil(plain.header("Content-Encoding"))
        XCTAssertEqual(plain.text, payload)

        client.send("HEAD / HTTP/1.1\r\nHost: x\r\n\r\n")
        let head = try XCTUnwrap(client.readResponse(isHead: true))
        XCTAssertEqual(head.header("Content-Length"), String(payload.utf8.count))
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponse()?.text, payload)
    }

    func testGzipRequestBody() throws {
        let server = try start()
        let client = try RawClient(port: server.port)
        let body = try Gzip.compress(Array("hello gzip".utf8))
        client.send("POST /g HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: \(body.count)\r\n\r\n")
        client.send(body)
        XCTAssertEqual(client.readResponse()?.text, "/g:hello gzip")

        client.send("POST /g HTTP/1.1\r\nHost: x\r\nContent-Encoding: br\r\nContent-Length: 1\r\n\r\nx")
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.status, 415)
        XCTAssertTrue(r.text.contains("unsupported_media_type"))
        XCTAssertEqual(r.header("Accept-Encoding"), "gzip", "RFC 9110 §15.5.16: name the codings accepted")

        client.send("POST /g HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nnope")
        XCTAssertEqual(client.readResponse()?.status, 400)
    }

    func testMalformedQueryEscapesAre400() throws {
        let server = try start()
        for target in ["/q?x=%zz", "/q?x=%4", "/q?%zz=1", "/q%zz", "/q?x=%ff", "/q?x=%C3%28"] {
            let client = try RawClient(port: server.port)
            client.send("GET \(target) HTTP/1.1\r\nHost: x\r\n\r\n")
            let r = try XCTUnwrap(client.readResponse(), target)
            XCTAssertEqual(r.status, 400, target)
            XCTAssertTrue(r.text.contains("bad_request"), target)
        }
        let client = try RawClient(port: server.port)
        client.send("GET /q?x=%41+b&y=%C3%A9 HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponse()?.status, 200)
    }

    func testTwoAuthorizationFieldsAre400() throws {
        let server = try start()
        let client = try RawClient(port: server.port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer a\r\nauthorization: Bearer b\r\n\r\n")
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.status, 400)
        XCTAssertEqual(r.header("Connection"), "close")
    }

    func testHTTP10ChunkedIs400() throws {
        let server = try start()
        let client = try RawClient(port: server.port)
        client.send("POST /c HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n")
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.status, 400)
        XCTAssertTrue(r.text.contains("HTTP/1.0"))
    }

    func testGzipBombIs413() throws {
        let server = try start { $0.maxBodyBytes = 64 * 1024 }
        let client = try RawClient(port: server.port)
        let bomb = try Gzip.compress([UInt8](repeating: 0, count: 4 << 20))
        XCTAssertLessThan(bomb.count, 64 * 1024)
        client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: \(bomb.count)\r\n\r\n")
        client.send(bomb)
        XCTAssertEqual(client.readResponse()?.status, 413)
    }

    func testExpectContinue() throws {
        let server = try start { $0.maxBodyBytes = 100 }
        let client = try RawClient(port: server.port)
        client.send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        let interim = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(interim.status, 100)
        client.send("hello")
        XCTAssertEqual(client.readResponse()?.text, "/e:hello")

        let other = try RawClient(port: server.port)
        other.send("POST /e HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertEqual(other.readResponse()?.status, 413)
    }

    func testHTTP10ClosesUnlessKeepAlive() throws {
        let server = try start()
        let client = try RawClient(port: server.port)
        client.send("GET /a HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.header("Connection"), "keep-alive")
        client.send("GET /b HTTP/1.0\r\n\r\n")
        XCTAssertEqual(client.readResponse()?.header("Connection"), "close")
        XCTAssertTrue(client.isClosedByPeer())
    }

    func testShutdownDrainsInFlightRequest() throws {
        let server = try start(handler: { request, responder in
            DispatchQueue.global().asyncAfter(deadline: .now() + 0.3) {
                responder.respond(HTTPResponse(status: 200, contentType: "text/plain", body: "done"))
            }
        })
        let idle = try RawClient(port: server.port)
        let client = try RawClient(port: server.port)
        client.send("GET /slow HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(50_000)
        let finished = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            server.shutdown()
            finished.signal()
        }
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.text, "done")
        XCTAssertEqual(r.header("Connection"), "close")
        XCTAssertTrue(idle.isClosedByPeer())
        XCTAssertEqual(finished.wait(timeout: .now() + 2), .success)
        XCTAssertEqual(server.openConnections, 0)
        XCTAssertThrowsError(try RawClient(port: server.port))
    }

    func testRespondAfterCloseIsDroppedAndIsClosedReports() throws {
        let parked = Mutex<(any HTTPResponder)?>(nil)
        let server = try start(handler: { _, responder in parked.withLock { $0 = responder } })
        let client = try RawClient(port: server.port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(100_000)
        client.abort()
        usleep(100_000)
        let responder = try XCTUnwrap(parked.withLock { $0 })
        XCTAssertTrue(responder.isClosed)
        responder.respond(HTTPResponse(status: 200))
        XCTAssertEqual(server.openConnections, 0)
    }

    func testTooManyConnectionsGet503() throws {
        let server = try start {
            $0.maxConnections = 1
            $0.serverName = "kidledger-test"
        }
        let first = try RawClient(port: server.port)
        first.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(first.readResponse()?.status, 200)
        do {
            let second = try RawClient(port: server.port)
            let r = try XCTUnwrap(second.readResponse())
            XCTAssertEqual(r.status, 503)
            assertServerFields(r, serverName: "kidledger-test")
            XCTAssertTrue(r.text.contains("\"code\":\"service_unavailable\""))
        }
        // A refused client that sends its request at once still reads the 503, not a reset.
        for i in 0..<20 {
            let client = try RawClient(port: server.port)
            client.send("POST /v1/accounts HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            XCTAssertEqual(client.readResponse()?.status, 503, "client \(i)")
            XCTAssertTrue(client.isClosedByPeer())
        }
        do {
            // Also one whose request arrives after the refusal went out.
            let late = try RawClient(port: server.port)
            usleep(100_000)
            late.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            usleep(50_000)
            XCTAssertEqual(late.readResponse()?.status, 503)
            XCTAssertTrue(late.isClosedByPeer())
        }
        usleep(500_000)
        XCTAssertEqual(server.openConnections, 1, "refused connections linger briefly, then close")
    }

    /// A real `Date` (within a minute of now) and the configured `Server`.
    private func assertServerFields(_ r: RawClient.Response, serverName: String, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertEqual(r.header("Server"), serverName, file: file, line: line)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let date = r.header("Date").flatMap { formatter.date(from: $0) }
        XCTAssertLessThan(abs(date?.timeIntervalSinceNow ?? .infinity), 60, "Date: \(r.header("Date") ?? "none")", file: file, line: line)
    }

    func testOutOfDescriptorsAnswered503WithoutSpinning() throws {
        let server = try start { $0.serverName = "kidledger-test" }
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let saved = limit
        let highest = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap { Int32($0) }.max() ?? 0
        limit.rlim_cur = rlim_t(highest + 16)
        XCTAssertEqual(setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit), 0)
        var fillers: [Int32] = []
        defer {
            for fd in fillers { close(fd) }
            var restored = saved
            setrlimit(Int32(RLIMIT_NOFILE.rawValue), &restored)
        }
        while true {
            let fd = open("/dev/null", O_RDONLY)
            if fd < 0 { break }
            fillers.append(fd)
        }
        XCTAssertEqual(errno, EMFILE)
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        let cpuBefore = Self.seconds(usage.ru_utime) + Self.seconds(usage.ru_stime)
        let started = EventLoop.monotonicNow()
        var responses: [RawClient.Response?] = []
        var clients: [RawClient] = []
        for _ in 0..<3 {
            // One descriptor for the client's socket; the server has none left to accept it.
            close(fillers.removeLast())
            let client = try RawClient(port: server.port)
            clients.append(client)
            client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            responses.append(client.readResponse())
            usleep(150_000)
        }
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        let cpu = Self.seconds(usage.ru_utime) + Self.seconds(usage.ru_stime) - cpuBefore
        let elapsed = EventLoop.monotonicNow() - started
        // Checked with descriptors to spare again (XCTest and Foundation open files).
        for fd in fillers { close(fd) }
        fillers = []
        XCTAssertLessThan(cpu, 0.5 * elapsed, "the event loops must not spin")
        for (i, r) in responses.enumerated() {
            XCTAssertEqual(r?.status, 503, "client \(i)")
            if let r { assertServerFields(r, serverName: "kidledger-test") }
        }
        let client = try RawClient(port: server.port)
        client.send("GET /again HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponse()?.text, "/again:")
    }

    private static func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }

    func testBlankLineTricklerGets408AtHeaderTimeout() throws {
        let server = try start {
            $0.headerTimeout = 0.3
            $0.idleTimeout = 5
        }
        let client = try RawClient(port: server.port)
        let started = Date()
        for _ in 0..<3 {
            client.send("\r\n")
            usleep(100_000)
        }
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.status, 408)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.0)
        XCTAssertTrue(client.isClosedByPeer())
    }

    func testTooManyEmptyLinesAre400() throws {
        let server = try start()
        let client = try RawClient(port: server.port)
        client.send(String(repeating: "\r\n", count: 9) + "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponse()?.status, 400)
        XCTAssertTrue(client.isClosedByPeer())
        let ok = try RawClient(port: server.port)
        ok.send(String(repeating: "\r\n", count: 8) + "GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(ok.readResponse()?.text, "/ok:")
    }

    func testEmptyLineSplitAcrossReads() throws {
        let server = try start()
        let client = try RawClient(port: server.port)
        client.send("\r")
        usleep(50_000)
        client.send("\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.text, "/healthz:")
    }

    func testHalfClosedClientGetsEveryAnswerInOrder() throws {
        let server = try start(handler: { request, responder in
            let delay = request.path == "/v1/accounts" ? 0.3 : 0.1
            DispatchQueue.global().asyncAfter(deadline: .now() + delay) {
                var response = HTTPResponse(status: 200, contentType: "text/plain", body: "late" + request.path + ":")
                response.body += request.body
                responder.respond(response)
            }
        })
        let client = try RawClient(port: server.port)
        client.send("POST /v1/accounts HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}GET /b HTTP/1.1\r\nHost: x\r\n\r\n")
        client.shutdownWrite()
        let first = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(first.text, "late/v1/accounts:{}")
        XCTAssertNil(first.header("Connection"))
        let second = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(second.text, "late/b:")
        XCTAssertEqual(second.header("Connection"), "close")
        XCTAssertTrue(client.isClosedByPeer())
        usleep(50_000)
        XCTAssertEqual(server.openConnections, 0)
    }

    func testHalfCloseWithNothingInFlightClosesAtOnce() throws {
        let server = try start { $0.idleTimeout = 5 }
        let client = try RawClient(port: server.port)
        client.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponse()?.text, "/a:")
        let started = Date()
        client.shutdownWrite()
        XCTAssertTrue(client.isClosedByPeer())
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.0)

        // An incomplete request cannot complete any more: closed without an answer.
        let partial = try RawClient(port: server.port)
        partial.send("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        partial.shutdownWrite()
        XCTAssertNil(partial.readResponse())
        usleep(50_000)
        XCTAssertEqual(server.openConnections, 0)
    }

    func testHTTP10ExpectContinueGetsNoInterimResponse() throws {
        let server = try start()
        let client = try RawClient(port: server.port)
        client.send("POST /e HTTP/1.0\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n")
        usleep(50_000)
        client.send("hello")
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.text, "/e:hello")
    }

    func testHTTP11WithoutHostIs400() throws {
        let server = try start()
        let client = try RawClient(port: server.port)
        client.send("GET / HTTP/1.1\r\n\r\n")
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.status, 400)
        XCTAssertTrue(r.text.contains("Host"))
        let old = try RawClient(port: server.port)
        old.send("GET /old HTTP/1.0\r\n\r\n")
        XCTAssertEqual(old.readResponse()?.text, "/old:")
    }

    func testAccessLogDurationIsMeasured() throws {
        let entries = Mutex<[AccessLogEntry]>([])
        let server = try start({ config in
            config.accessLog = { entry in entries.withLock { $0.append(entry) } }
        }, handler: { request, responder in
            // Answered within the event that read the request, after real work.
            usleep(30_000)
            responder.respond(HTTPResponse(status: 200, contentType: "text/plain", body: "ok"))
        })
        let client = try RawClient(port: server.port)
        client.send("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponse()?.status, 200)
        usleep(20_000)
        let duration = try XCTUnwrap(entries.withLock { $0.first?.duration })
        XCTAssertGreaterThanOrEqual(duration, 0.03)
        XCTAssertLessThan(duration, 1)
    }

    func testAccessLogOmitsQuery() throws {
        let entries = Mutex<[AccessLogEntry]>([])
        let server = try start { config in
            config.accessLog = { entry in entries.withLock { $0.append(entry) } }
        }
        let client = try RawClient(port: server.port)
        client.send("GET /v1/x?token=secret HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponse()?.status, 200)
        usleep(20_000)
        let logged = entries.withLock { $0 }
        XCTAssertEqual(logged.first?.path, "/v1/x")
        XCTAssertEqual(logged.first?.status, 200)
        XCTAssertEqual(logged.first?.remoteAddress, "127.0.0.1")
    }

    func testBodyTimeoutSends408() throws {
        let server = try start { $0.bodyTimeout = 0.2 }
        let client = try RawClient(port: server.port)
        client.send("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.status, 408)
        XCTAssertTrue(client.isClosedByPeer())
    }

    func testLargeResponseSurvivesPartialWrites() throws {
        let big = [UInt8](repeating: 0x61, count: 8 << 20)
        let server = try start(handler: { _, responder in
            responder.respond(HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/octet-stream")]), body: big))
        })
        let client = try RawClient(port: server.port)
        client.send("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\n")
        usleep(100_000)
        XCTAssertEqual(client.readResponse()?.body.count, big.count)
        XCTAssertEqual(client.readResponse()?.body.count, big.count)
    }
}
