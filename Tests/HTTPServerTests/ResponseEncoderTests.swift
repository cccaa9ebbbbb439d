@testable import HTTPServer
import XCTest

/// The exact bytes of encoded responses: status lines, the fields the encoder drops or
/// adds, HEAD and bodyless answers, and heads too long for a buffer on the stack.
final class ResponseEncoderTests: XCTestCase {
    let fixed = Array("Date: D\r\nServer: S\r\n".utf8)

    func encode(_ r: HTTPResponse, head: Bool = false, close: Bool = false, keepAlive: Bool = false,
                gzip: Bool = false, threshold: Int = 1 << 20) -> (String, Int) {
        var out = Array("prev".utf8)
        let n = ResponseEncoder.encode(r, options: .init(isHead: head, close: close, announceKeepAlive: keepAlive,
                                                         acceptsGzip: gzip, compressionThreshold: threshold),
                                       fixedFields: fixed, into: &out)
        XCTAssertEqual(Array(out.prefix(4)), Array("prev".utf8))
        return (String(decoding: out.dropFirst(4), as: UTF8.self), n)
    }

    func testExactBytes() {
        let created = HTTPResponse(status: 201, headers: HTTPHeaders([("Content-Type", "application/json"), ("Location", "/x"),
                                                                      ("date", "no"), ("Connection", "no"), ("Keep-Alive", "no"),
                                                                      ("Server", "no"), ("Transfer-Encoding", "no")]),
                                   body: Array("{}".utf8))
        XCTAssertEqual(encode(created).0, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nLocation: /x\r\n"
                       + "Content-Length: 2\r\nDate: D\r\nServer: S\r\n\r\n{}")
        XCTAssertEqual(encode(created).1, 2)
        XCTAssertEqual(encode(created, close: true).0, "HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nLocation: /x\r\n"
                       + "Content-Length: 2\r\nDate: D\r\nServer: S\r\nConnection: close\r\n\r\n{}")

        let head = HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Length", "42")]))
        XCTAssertEqual(encode(head, head: true).0, "HTTP/1.1 200 OK\r\nContent-Length: 42\r\nDate: D\r\nServer: S\r\n\r\n")
        XCTAssertEqual(encode(head, head: true).1, 0)
        let headWithBody = HTTPResponse(status: 200, body: Array("abc".utf8))
        XCTAssertEqual(encode(headWithBody, head: true).0, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nDate: D\r\nServer: S\r\n\r\n")

        XCTAssertEqual(encode(HTTPResponse(status: 204, body: Array("x".utf8)), close: true).0,
                       "HTTP/1.1 204 No Content\r\nDate: D\r\nServer: S\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(encode(HTTPResponse(status: 299), keepAlive: true).0,
                       "HTTP/1.1 299 Status 299\r\nContent-Length: 0\r\nDate: D\r\nServer: S\r\nConnection: keep-alive\r\n\r\n")
        XCTAssertEqual(encode(HTTPResponse(status: 431)).0,
                       "HTTP/1.1 431 Request Header Fields Too Large\r\nContent-Length: 0\r\nDate: D\r\nServer: S\r\n\r\n")

        // Compressible but not accepted: only Vary is added.
        let json = HTTPResponse(status: 200, headers: HTTPHeaders([("Content-Type", "application/json")]),
                                body: Array(repeating: UInt8(ascii: "a"), count: 100))
        XCTAssertEqual(encode(json, threshold: 10).0, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                       + "Vary: Accept-Encoding\r\nContent-Length: 100\r\nDate: D\r\nServer: S\r\n\r\n" + String(repeating: "a", count: 100))
        let (gzipped, n) = encode(json, gzip: true, threshold: 10)
        XCTAssertTrue(gzipped.hasPrefix("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Encoding: gzip\r\n"
                                        + "Vary: Accept-Encoding\r\nContent-Length: \(n)\r\nDate: D\r\nServer: S\r\n\r\n"), gzipped)

        // A head longer than a stack buffer.
        let long = String(repeating: "v", count: 3000)
        let big = HTTPResponse(status: 200, headers: HTTPHeaders([("X-A", long), ("X-B", long)]), body: [1])
        XCTAssertEqual(encode(big).0, "HTTP/1.1 200 OK\r\nX-A: \(long)\r\nX-B: \(long)\r\nContent-Length: 1\r\n"
                       + "Date: D\r\nServer: S\r\n\r\n\u{1}")
    }
}

final class RequestTargetTests: XCTestCase {
    /// Targets split at their first "?" into path and query, at every position of short
    /// and long targets.
    func testWhichContentTypesAreCompressed() {
        for type in ["application/json", "Application/JSON; charset=utf-8", "application/problem+json", "text/plain",
                     "TEXT/html", "image/svg+xml", "application/yaml", "text/javascript", "application/xml"] {
            XCTAssertTrue(ContentCoding.isCompressible(type), type)
        }
        for type in [nil, "", "image/png", "application/octet-stream", "application/gzip", "tex", "application/jso"] {
            XCTAssertFalse(ContentCoding.isCompressible(type), type ?? "nil")
        }
    }

    func testTargetsSplitAtTheFirstQuestionMark() {
        XCTAssertTrue(HTTPRequest.split("") == ("", nil))
        XCTAssertTrue(HTTPRequest.split("?") == ("", ""))
        XCTAssertTrue(HTTPRequest.split("/a?b?c") == ("/a", "b?c"))
        XCTAssertTrue(HTTPRequest.split("/é?q=ü") == ("/é", "q=ü"))
        for length in [1, 7, 8, 31, 32, 33, 100] {
            let plain = "/" + String(repeating: "p", count: length)
            XCTAssertTrue(HTTPRequest.split(plain) == (plain, nil), plain)
            for at in 0...plain.count {
                var target = plain
                target.insert("?", at: target.index(target.startIndex, offsetBy: at))
                let expected = (String(target.prefix(at)), String(target.dropFirst(at + 1)))
                let split = HTTPRequest.split(target)
                XCTAssertEqual(split.path, expected.0, target)
                XCTAssertEqual(split.query, expected.1, target)
            }
        }
    }
}
