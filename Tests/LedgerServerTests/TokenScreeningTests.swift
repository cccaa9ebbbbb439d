import Foundation
import Glibc
import HTTPServer
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// Where the head of a body request has its token looked up (`AppHandler.screen`): over
/// SQLite on the event loop, as every short read; over PostgreSQL, when the token is not
/// remembered, on a worker (`BodyAdmission.later`), never on the loop. Either way the head
/// alone decides, before the body is read.
final class TokenScreeningTests: XCTestCase {
    private var s: TestServer!
    private var handler: AppHandler!

    override func setUpWithError() throws {
        s = try TestServer()
        handler = AppHandler(services: s.app.services, router: Routes.make(), staticFiles: StaticFiles(root: s.dataDirectory))
    }

    override func tearDown() { s?.stop() }

    private func head(token: String) -> HTTPRequestHead {
        var h = HTTPHeaders()
        h.set("Authorization", "Bearer \(token)")
        h.set("Content-Type", "application/json")
        return HTTPRequestHead(method: "POST", target: "/v1/households", minorVersion: 1, headers: h,
                               framing: .length(4_000_000), keepAlive: true, expectContinue: false, headLength: 0)
    }

    /// The verdict on `admission`, and the name of the thread that gave it.
    private func verdict(_ admission: BodyAdmission) -> (BodyAdmission, thread: String)? {
        guard case .later(let decide) = admission else { return (admission, Self.threadName()) }
        let given = XCTestExpectation(description: "verdict")
        nonisolated(unsafe) var result: (BodyAdmission, String)?
        decide { v in
            result = (v, Self.threadName())
            given.fulfill()
        }
        XCTAssertEqual(XCTWaiter.wait(for: [given], timeout: 10), .completed)
        return result
    }

    /// The calling thread's name, as the system shows it.
    private static func threadName() -> String {
        ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "")
            .trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func testAKnownTokenIsLookedUpWhereStorageReadsRun() throws {
        let (_, token) = s.signup("mum")
        s.app.services.readCache.invalidate(tokens: true)
        let first = handler.screen(head(token: token), remoteAddress: "127.0.0.1")
        if s.app.services.backend.offLoop {
            guard case .later = first else { return XCTFail("a token not remembered is looked up off the loop") }
            let (v, thread) = try XCTUnwrap(verdict(first))
            XCTAssertTrue(thread.hasPrefix("kl-worker"), "looked up on \(thread)")
            guard case .read = v else { return XCTFail("a known token's body is read") }
            // Now remembered: decided at once, with no storage read.
            guard case .read = handler.screen(head(token: token), remoteAddress: "127.0.0.1") else {
                return XCTFail("a remembered token is decided on the loop")
            }
        } else {
            guard case .read = first else { return XCTFail("over SQLite the head is decided at once") }
        }
    }

    func testAnUnknownTokenIsRefusedFromTheHead() throws {
        let unknown = "kl_" + String(repeating: "A", count: 43)
        let admission = handler.screen(head(token: unknown), remoteAddress: "127.0.0.1")
        if case .later = admission { XCTAssertTrue(s.app.services.backend.offLoop) }
        let (v, _) = try XCTUnwrap(verdict(admission))
        guard case .refuse(let r) = v else { return XCTFail("an unknown token is refused unread") }
        XCTAssertEqual(r.status, 401)
    }

    /// Through the whole server: an unknown token's POST announcing 4 MiB is answered 401
    /// before any of the body is sent (over PostgreSQL, after the worker's lookup).
    func testAnUnknownTokenIsAnsweredBeforeTheBodyOverASocket() throws {
        let live = try TestServer(.live)
        defer { live.stop() }
        let fd = LoopbackSocket.connect(live.app.port, from: "127.0.0.1", timeout: 5)
        defer { close(fd) }
        let request = "POST /v1/households HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer kl_\(String(repeating: "E", count: 43))\r\n"
            + "Content-Type: application/json\r\nContent-Length: 4194303\r\n\r\n"
        XCTAssertEqual(request.withCString { send(fd, $0, strlen($0), 0) }, request.utf8.count)
        var buffer = [UInt8](repeating: 0, count: 4096)
        let n = recv(fd, &buffer, buffer.count, 0)
        XCTAssertGreaterThan(n, 0, "answered without the body")
        XCTAssertTrue(String(decoding: buffer.prefix(max(0, n)), as: UTF8.self).hasPrefix("HTTP/1.1 401"))
    }
}
