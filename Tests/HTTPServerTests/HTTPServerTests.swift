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

    private func start(_ configure: (inout HTTPServerConfiguration) -> Void = { _ in },
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
            XCTAssertEqual(r.header("Server"), "kidledger")
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
        let server = try start()
        let client = try RawClient(port: server.port)
        client.send("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n")
        let r = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(r.status, 400)
        XCTAssertTrue(r.text.hasPrefix("{\"type\":\"urn:kidledger:bad_request\",\"title\":\"Bad Request\",\"status\":400,"))
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

        client.send("POST /g HTTP/1.1\r\nHost: x\r\nContent-Encoding: gzip\r\nContent-Length: 4\r\n\r\nnope")
        XCTAssertEqual(client.readResponse()?.status, 400)
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
        do {
            let client = try RawClient(port: server.port)
            client.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            usleep(100_000)
        }
        usleep(100_000)
        let responder = try XCTUnwrap(parked.withLock { $0 })
        XCTAssertTrue(responder.isClosed)
        responder.respond(HTTPResponse(status: 200))
        XCTAssertEqual(server.openConnections, 0)
    }

    func testTooManyConnectionsGet503() throws {
        let server = try start { $0.maxConnections = 1 }
        let first = try RawClient(port: server.port)
        first.send("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(first.readResponse()?.status, 200)
        let second = try RawClient(port: server.port)
        XCTAssertEqual(second.readResponse()?.status, 503)
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
