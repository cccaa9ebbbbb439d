import XCTest
@testable import HTTPServer

final class HTTPParserTests: XCTestCase {
    struct Parsed {
        var heads: [HTTPRequestHead] = []
        var bodies: [[UInt8]] = []
        var error: HTTPParserError?
    }

    /// Feeds `chunks` one after another, keeping unconsumed bytes like a connection does.
    func feed(_ chunks: [[UInt8]], maxHead: Int = 16 * 1024, maxBody: Int = 1 << 20) -> Parsed {
        var parser = HTTPParser(maxHeadBytes: maxHead, maxBodyBytes: maxBody)
        var pending: [UInt8] = []
        var out = Parsed()
        for chunk in chunks {
            pending += chunk
            var stop = false
            while !stop {
                let (n, result) = pending.withUnsafeBufferPointer { parser.parse($0) }
                pending.removeFirst(n)
                switch result {
                case .needMore: stop = true
                case .head(let h): out.heads.append(h)
                case .end(let b): out.bodies.append(b)
                case .error(let e): out.error = e; return out
                }
            }
        }
        return out
    }

    func feed(_ text: String, maxHead: Int = 16 * 1024, maxBody: Int = 1 << 20) -> Parsed {
        feed([Array(text.utf8)], maxHead: maxHead, maxBody: maxBody)
    }

    /// `text` cut into two reads at every position parses to the same requests.
    func assertParsesAtEverySplit(_ text: [UInt8], targets: [String], bodies: [[UInt8]],
                                  file: StaticString = #filePath, line: UInt = #line) {
        for split in 0...text.count {
            let r = feed([Array(text[..<split]), Array(text[split...])])
            XCTAssertNil(r.error, "split \(split)", file: file, line: line)
            XCTAssertEqual(r.heads.map(\.target), targets, "split \(split)", file: file, line: line)
            XCTAssertEqual(r.bodies, bodies, "split \(split)", file: file, line: line)
        }
    }

    func assertBad(_ text: String, file: StaticString = #filePath, line: UInt = #line) {
        let r = feed(text)
        guard case .badRequest? = r.error else {
            return XCTFail("expected 400 for \(text.debugDescription), got \(String(describing: r.error)) heads=\(r.heads.count)", file: file, line: line)
        }
    }

    /// Targets and field values are scanned eight bytes at a time: every byte value at every
    /// position of a long target and a long value is accepted or refused as byte by byte.
    func testEveryByteInLongTargetsAndValues() {
        let prefix = "/" + String(repeating: "a", count: 6)
        for position in 0..<20 {
            for byte in 0...255 where byte != 37 {  // "%" starts an escape
                var target = Array((prefix + String(repeating: "b", count: 20)).utf8)
                target[prefix.utf8.count + position] = UInt8(byte)
                let request = Array("GET ".utf8) + target + Array(" HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
                let r = feed([request])
                if byte > 32 && byte < 127 {
                    XCTAssertNil(r.error, "target byte \(byte) at \(position)")
                    XCTAssertEqual(r.heads.first?.target, String(decoding: target, as: UTF8.self), "target byte \(byte) at \(position)")
                } else {
                    XCTAssertNotNil(r.error, "target byte \(byte) at \(position)")
                }

                var value = Array(("v" + String(repeating: "c", count: 20) + "v").utf8)
                value[1 + position] = UInt8(byte)
                let field = Array("GET / HTTP/1.1\r\nHost: x\r\nX-Long: ".utf8) + value + Array("\r\n\r\n".utf8)
                let f = feed([field])
                if byte == 9 || (byte >= 32 && byte != 127) {
                    XCTAssertNil(f.error, "value byte \(byte) at \(position)")
                    XCTAssertEqual(f.heads.first?.headers["X-Long"], String(decoding: value, as: UTF8.self), "value byte \(byte) at \(position)")
                } else {
                    XCTAssertNotNil(f.error, "value byte \(byte) at \(position)")
                }
            }
        }
    }

    func testSimpleGet() {
        let r = feed("GET /a?b=1 HTTP/1.1\r\nHost: x\r\nX-Thing:  v  \r\n\r\n")
        XCTAssertNil(r.error)
        XCTAssertEqual(r.heads.count, 1)
        XCTAssertEqual(r.heads[0].method, "GET")
        XCTAssertEqual(r.heads[0].target, "/a?b=1")
        XCTAssertEqual(r.heads[0].headers["x-thing"], "v")
        XCTAssertTrue(r.heads[0].keepAlive)
        XCTAssertEqual(r.bodies, [[]])
    }

    func testEveryByteBoundary() {
        let text = Array("POST /p HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\nhelloGET /q HTTP/1.1\r\nHost: x\r\n\r\nPOST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;ext=1\r\nabc\r\n2\r\nde\r\n0\r\nTrailer: x\r\n\r\n".utf8)
        assertParsesAtEverySplit(text, targets: ["/p", "/q", "/c"], bodies: [Array("hello".utf8), [], Array("abcde".utf8)])
        // And one byte at a time.
        let r = feed(text.map { [$0] })
        XCTAssertEqual(r.bodies.count, 3)
    }

    func testEveryByteBoundaryWithLeadingEmptyLines() {
        let text = Array("\r\n\r\nGET /a HTTP/1.1\r\nHost: x\r\n\r\n\r\nPOST /b HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok\r\n\r\n\r\nGET /c HTTP/1.1\r\nHost: x\r\n\r\n".utf8)
        assertParsesAtEverySplit(text, targets: ["/a", "/b", "/c"], bodies: [[], Array("ok".utf8), []])
        XCTAssertEqual(feed(text.map { [$0] }).heads.map(\.target), ["/a", "/b", "/c"])
        // The audit's case: a CR and its LF in separate reads.
        let split = feed([Array("\r".utf8), Array("\nGET /healthz HTTP/1.1\r\nHost: x\r\n\r\n".utf8)])
        XCTAssertNil(split.error)
        XCTAssertEqual(split.heads.map(\.target), ["/healthz"])
    }

    func testPipelinedRequests() {
        let r = feed("GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        XCTAssertEqual(r.heads.map(\.target), ["/1", "/2", "/3"])
        XCTAssertEqual(r.heads.map(\.keepAlive), [true, true, false])
    }

    func testHTTP10KeepAlive() {
        XCTAssertFalse(feed("GET / HTTP/1.0\r\n\r\n").heads[0].keepAlive)
        XCTAssertTrue(feed("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n").heads[0].keepAlive)
        XCTAssertEqual(feed("GET / HTTP/1.0\r\n\r\n").heads[0].minorVersion, 0)
    }

    func testExpectContinue() {
        let r = feed("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\n")
        XCTAssertTrue(r.heads[0].expectContinue)
        XCTAssertEqual(r.heads[0].framing, .length(3))
    }

    func testRejections() {
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\nabc")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: 3, 4\r\n\r\nabc")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: abc\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nContent-Length: \r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nBad Name: x\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nBad(Name): x\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nName : x\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\n: x\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nNoColon\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nX: a\u{01}b\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nX: a\u{7f}b\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nX: a\0b\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nX: a\rb\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\r\nX: a\r\n\tb\r\n\r\n")
        assertBad("GET / HTTP/1.1\nHost: x\n\n")
        assertBad("GET / HTTP/1.1\r\nHost: x\n\r\n")
        assertBad("GET  / HTTP/1.1\r\nHost: x\r\n\r\n")
        assertBad("GET / HTTP/2.0\r\n\r\n")
        assertBad("GET / HTTP/1.1 \r\n\r\n")
        assertBad("GET /\r\n\r\n")
        assertBad("G(T / HTTP/1.1\r\nHost: x\r\n\r\n")
        assertBad("GET nopath HTTP/1.1\r\nHost: x\r\n\r\n")
        assertBad("GET /a\u{7f} HTTP/1.1\r\nHost: x\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer x\r\nAuthorization: Bearer x\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: a\r\nAUTHORIZATION: Bearer x\r\nauthorization: Basic y\r\n\r\n")
        assertBad("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        assertBad("POST / HTTP/1.0\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\nabc")
        for target in ["/?x=%zz", "/?x=%", "/?x=%4", "/a%g0", "/?x=1%", "http://h/%zz"] {
            assertBad("GET \(target) HTTP/1.1\r\nHost: a\r\n\r\n")
        }
        // chunked framing
        assertBad("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")
        assertBad("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n")
        assertBad("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n\r\n")
        assertBad("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n1000000000000000000\r\n")
        assertBad("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcX\r\n")
        assertBad("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\r\n")
        assertBad("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nBad Trailer\r\n\r\n")
    }

    func testWellFormedEscapesAndOneAuthorizationAccepted() {
        let r = feed("GET /a%2Fb?x=%41%c3%a9&y=%25 HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer x\r\n\r\n")
        XCTAssertNil(r.error)
        XCTAssertEqual(r.heads.first?.target, "/a%2Fb?x=%41%c3%a9&y=%25")
        let chunked = feed("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        XCTAssertNil(chunked.error)
    }

    func testDuplicateEqualContentLengthAccepted() {
        let r = feed("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc")
        XCTAssertNil(r.error)
        XCTAssertEqual(r.bodies, [Array("abc".utf8)])
    }

    func testLimits() {
        let big = "GET / HTTP/1.1\r\nHost: x\r\nX: " + String(repeating: "a", count: 200) + "\r\n\r\n"
        XCTAssertEqual(feed(big, maxHead: 100).error, .headTooLarge)
        XCTAssertEqual(feed("GET / HTTP/1.1\r\nHost: x\r\nX: " + String(repeating: "a", count: 200), maxHead: 100).error, .headTooLarge)
        XCTAssertEqual(feed("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\n", maxBody: 10).error, .bodyTooLarge)
        XCTAssertEqual(feed("POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999999\r\n\r\n", maxBody: 10).error, .bodyTooLarge)
        XCTAssertEqual(feed("POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nabcdef\r\n6\r\nabcdef\r\n", maxBody: 10).error, .bodyTooLarge)
    }

    func testLeadingEmptyLinesTolerated() {
        let r = feed("\r\n\r\nGET / HTTP/1.1\r\nHost: x\r\n\r\n")
        XCTAssertNil(r.error)
        XCTAssertEqual(r.heads.count, 1)
    }

    func testTooManyLeadingEmptyLinesRefused() {
        let request = "GET / HTTP/1.1\r\nHost: x\r\n\r\n"
        let most = String(repeating: "\r\n", count: HTTPParser.maxLeadingEmptyLines)
        XCTAssertEqual(feed(most + request).heads.count, 1)
        XCTAssertEqual(feed(most + request + most + request).heads.count, 2, "the count restarts with each request")
        assertBad(most + "\r\n" + request)
        // Also when every empty line arrives in its own read.
        let trickled = feed(Array(repeating: Array("\r\n".utf8), count: HTTPParser.maxLeadingEmptyLines + 1))
        guard case .badRequest? = trickled.error else { return XCTFail("expected 400, got \(String(describing: trickled.error))") }
    }

    func testEmptyLineStartsARequest() {
        var parser = HTTPParser()
        XCTAssertTrue(parser.isIdle)
        let (n, result) = Array("\r\n".utf8).withUnsafeBufferPointer { parser.parse($0) }
        XCTAssertEqual(n, 2)
        guard case .needMore = result else { return XCTFail("expected needMore") }
        XCTAssertFalse(parser.isIdle, "the header timeout runs from the first empty line")
        XCTAssertTrue(parser.isReadingHead)
    }

    func testHostRequiredForHTTP11() {
        assertBad("GET / HTTP/1.1\r\n\r\n")
        assertBad("GET http://x/ HTTP/1.1\r\nAccept: */*\r\n\r\n")
        assertBad("GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n")
        let r = feed("GET / HTTP/1.0\r\n\r\n")
        XCTAssertNil(r.error)
        XCTAssertEqual(r.heads.count, 1)
    }

    func testExpectContinueIgnoredForHTTP10() {
        let r = feed("POST / HTTP/1.0\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc")
        XCTAssertNil(r.error)
        XCTAssertEqual(r.heads.first?.expectContinue, false)
        XCTAssertEqual(r.bodies, [Array("abc".utf8)])
    }

    func testManyTinyChunksDoNotRecurse() {
        var text = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        text += String(repeating: "1\r\na\r\n", count: 100_000)
        text += "0\r\n\r\n"
        let r = feed(text)
        XCTAssertNil(r.error)
        XCTAssertEqual(r.bodies.first?.count, 100_000)
    }
}

final class HeaderNameTests: XCTestCase {
    func testCaseInsensitiveEqualityIsASCIIOnly() {
        XCTAssertTrue("Content-Type".caseInsensitiveEquals("content-TYPE"))
        XCTAssertTrue("".caseInsensitiveEquals(""))
        XCTAssertTrue("X-A-Rather-Long-Header-Name-Past-Small-Strings".caseInsensitiveEquals("x-a-rather-long-header-name-past-small-strings"))
        XCTAssertFalse("Content-Type".caseInsensitiveEquals("Content-Typf"))
        XCTAssertFalse("Host".caseInsensitiveEquals("Hosts"))
        XCTAssertFalse("@".caseInsensitiveEquals("`"))   // 0x40 and 0x60 differ only in bit 5
        XCTAssertFalse("[".caseInsensitiveEquals("{"))
        XCTAssertFalse("É".caseInsensitiveEquals("é"))
        XCTAssertTrue("É".caseInsensitiveEquals("É"))
        var h = HTTPHeaders()
        h.add("X-One", "1")
        h.set("x-two", "2")
        h.set("X-ONE", "3")
        XCTAssertEqual(h.fields.map(\.name), ["x-two", "X-ONE"])
        XCTAssertEqual(h["x-one"], "3")
    }

    func testMethodsAndNamesAreKeptAsSent() {
        let text = "GETX / HTTP/1.1\r\nhOsT: a\r\nHost2: b\r\nauthorization: c\r\nContent-Typ: d\r\nIf-Match: e\r\n\r\n"
        var parser = HTTPParser()
        let (_, result) = Array(text.utf8).withUnsafeBufferPointer { parser.parse($0) }
        guard case .head(let head) = result else { return XCTFail("\(result)") }
        XCTAssertEqual(head.method, "GETX")
        XCTAssertEqual(head.headers.fields.map(\.name), ["hOsT", "Host2", "authorization", "Content-Typ", "If-Match"])
        XCTAssertEqual(head.headers.fields.map(\.value), ["a", "b", "c", "d", "e"])
        for method in ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS", "get", "PROPFIND"] {
            var p = HTTPParser()
            let (_, r) = Array("\(method) / HTTP/1.1\r\nHost: x\r\n\r\n".utf8).withUnsafeBufferPointer { p.parse($0) }
            guard case .head(let h) = r else { return XCTFail(method) }
            XCTAssertEqual(h.method, method)
        }
    }
}
