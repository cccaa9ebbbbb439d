import Foundation
import XCTest
@testable import HTTPServer

final class StaticFilesTests: XCTestCase {
    private var root: String = ""
    private var outside: String = ""

    override func setUpWithError() throws {
        let base = NSTemporaryDirectory() + "static-\(UUID().uuidString)"
        root = base + "/Public"
        outside = base + "/secret.txt"
        let fm = FileManager.default
        try fm.createDirectory(atPath: root + "/docs", withIntermediateDirectories: true)
        try "<h1>home</h1>".write(toFile: root + "/index.html", atomically: true, encoding: .utf8)
        try "body{}".write(toFile: root + "/site.css", atomically: true, encoding: .utf8)
        try "openapi: 3.1.0".write(toFile: root + "/docs/openapi.yaml", atomically: true, encoding: .utf8)
        try "top secret".write(toFile: outside, atomically: true, encoding: .utf8)
        try fm.createSymbolicLink(atPath: root + "/escape.txt", withDestinationPath: outside)
        try fm.createSymbolicLink(atPath: root + "/inside.css", withDestinationPath: root + "/site.css")
    }

    override func tearDownWithError() throws {
        try? FileManager.default.removeItem(atPath: (root as NSString).deletingLastPathComponent)
    }

    private func get(_ path: String, method: String = "GET", headers: [(String, String)] = []) -> HTTPResponse? {
        StaticFiles(root: root).response(for: HTTPRequest(method: method, target: path, headers: HTTPHeaders(headers)))
    }

    func testServesFilesWithTypes() throws {
        let index = try XCTUnwrap(get("/"))
        XCTAssertEqual(index.status, 200)
        XCTAssertEqual(String(decoding: index.body, as: UTF8.self), "<h1>home</h1>")
        XCTAssertEqual(index.headers["Content-Type"], "text/html; charset=utf-8")
        XCTAssertEqual(get("/site.css")?.headers["Content-Type"], "text/css; charset=utf-8")
        XCTAssertEqual(get("/docs/openapi.yaml?x=1")?.headers["Content-Type"], "application/yaml; charset=utf-8")
        XCTAssertEqual(get("/inside.css")?.status, 200)
        XCTAssertEqual(get("/site.css", method: "HEAD")?.status, 200)
        XCTAssertNil(get("/site.css", method: "POST"))
        XCTAssertNil(get("/missing.txt"))
        XCTAssertNil(get("/docs"))
    }

    func testTraversalAttemptsAreRefused() {
        for path in ["/../secret.txt", "/docs/../../secret.txt", "/%2e%2e/secret.txt", "/%2E%2E/secret.txt",
                     "/docs%2f..%2f..%2fsecret.txt", "/..%2fsecret.txt", "/escape.txt", "/site.css%00.txt",
                     "//etc/passwd", "/%2fetc%2fpasswd", "/docs/..\\..\\secret.txt", "/%zz", "etc/passwd"] {
            XCTAssertNil(get(path), path)
        }
    }

    func testETagAndNotModified() throws {
        let first = try XCTUnwrap(get("/site.css"))
        let tag = try XCTUnwrap(first.headers["ETag"])
        XCTAssertTrue(tag.hasPrefix("\"") && !tag.hasPrefix("W/"))
        let again = try XCTUnwrap(get("/site.css", headers: [("If-None-Match", "\"other\", \(tag)")]))
        XCTAssertEqual(again.status, 304)
        XCTAssertTrue(again.body.isEmpty)
        XCTAssertEqual(get("/site.css", headers: [("If-None-Match", "\"other\"")])?.status, 200)
    }

    func testThroughTheServer() throws {
        let files = StaticFiles(root: root)
        var config = HTTPServerConfiguration()
        config.port = 0
        config.eventLoops = 1
        let server = HTTPServer(configuration: config, handler: ClosureHandler { request, responder in
            responder.respond(files.response(for: request) ?? HTTPResponse(status: 404))
        })
        try server.start()
        defer { server.shutdown() }
        let client = try RawClient(port: server.port)
        client.send("GET /%2e%2e/secret.txt HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertEqual(client.readResponse()?.status, 404)
        client.send("GET /site.css HTTP/1.1\r\nHost: x\r\n\r\n")
        let ok = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(ok.status, 200)
        let tag = try XCTUnwrap(ok.header("ETag"))
        client.send("GET /site.css HTTP/1.1\r\nHost: x\r\nIf-None-Match: \(tag)\r\n\r\n")
        let notModified = try XCTUnwrap(client.readResponse())
        XCTAssertEqual(notModified.status, 304)
        XCTAssertEqual(notModified.header("ETag"), tag)
    }
}
