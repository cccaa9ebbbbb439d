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

    // MARK: what the screening found, kept for the request's handling

    /// A write's answer, whenever it comes.
    private final class Answer: HTTPResponder, @unchecked Sendable {
        private let lock = NSLock()
        private var response: HTTPResponse?
        private let given = XCTestExpectation(description: "answer")
        func respond(_ response: consuming HTTPResponse) {
            lock.withLock { self.response = response }
            given.fulfill()
        }
        var isClosed: Bool { false }
        func wait() -> HTTPResponse? {
            XCTAssertEqual(XCTWaiter.wait(for: [given], timeout: 10), .completed)
            return lock.withLock { response }
        }
    }

    private func transactionHead(_ household: String, _ child: String, token: String) -> HTTPRequestHead {
        var h = HTTPHeaders()
        h.set("Authorization", "Bearer \(token)")
        h.set("Content-Type", "application/json")
        return HTTPRequestHead(method: "POST", target: "/v1/households/\(household)/children/\(child)/transactions",
                               minorVersion: 1, headers: h, framing: .length(18), keepAlive: true, expectContinue: false,
                               headLength: 0)
    }

    /// Screens `head` on this thread, then handles a request of `headers` (the head's own, as
    /// the server hands them on, unless others are given) after `between` ran.
    private func screenedThenHandled(_ head: HTTPRequestHead, headers: HTTPHeaders? = nil,
                                     between: () -> Void = {}) throws -> HTTPResponse {
        let (v, _) = try XCTUnwrap(verdict(handler.screen(head, remoteAddress: "127.0.0.1")))
        guard case .read = v else { throw XCTSkip("the head was refused") }
        between()
        let answer = Answer()
        handler.handle(HTTPRequest(method: head.method, target: head.target, headers: headers ?? head.headers,
                                   body: Array(#"{"amountCents":5}"#.utf8)), responder: answer)
        return try XCTUnwrap(answer.wait())
    }

    func testAKnownTokensBodyIsHandledAfterItsScreening() throws {
        let (_, mum) = s.signup("mum")
        let h = s.household(mum)
        let kid = s.child(mum, household: h)
        XCTAssertEqual(try screenedThenHandled(transactionHead(h, kid, token: mum)).status, 201)
        // Again, the token remembered by now.
        XCTAssertEqual(try screenedThenHandled(transactionHead(h, kid, token: mum)).status, 201)
    }

    /// The caller found when the head was screened is not the answer once the token was
    /// revoked before the body was handled.
    func testATokenRevokedWhileTheBodyIsReadIsRefused() throws {
        let (_, mum) = s.signup("mum")
        let h = s.household(mum)
        let kid = s.child(mum, household: h)
        let r = s.call("POST", "/v1/tokens", token: mum, json: .obj(["deviceName": "tablet"]))
        XCTAssertEqual(r.status, 201)
        let (tabletId, tablet) = (try XCTUnwrap(r.json["id"]?.stringValue), try XCTUnwrap(r.json["secret"]?.stringValue))
        XCTAssertEqual(try screenedThenHandled(transactionHead(h, kid, token: tablet)).status, 201)
        let refused = try screenedThenHandled(transactionHead(h, kid, token: tablet)) {
            // On a thread of its own: a request handled in process on this thread would take
            // what this thread's screening kept.
            let server = s!, done = DispatchSemaphore(value: 0)
            nonisolated(unsafe) var status = 0
            Thread {
                status = server.call("DELETE", "/v1/tokens/\(tabletId)", token: mum).status
                done.signal()
            }.start()
            done.wait()
            XCTAssertEqual(status, 204)
        }
        XCTAssertEqual(refused.status, 401)
        let balance = s.call("GET", "/v1/households/\(h)/children/\(kid)", token: mum)
        XCTAssertEqual(balance.json["balanceCents"], .int(5), "the refused write was not made")
    }

    /// What a head's screening found is used for that head's request only: a request with
    /// other header fields (an unknown token, another media type) is checked on its own.
    func testAScreenedCallerIsNotLentToAnotherRequest() throws {
        let (_, mum) = s.signup("mum")
        let h = s.household(mum)
        let kid = s.child(mum, household: h)
        let head = transactionHead(h, kid, token: mum)
        var forged = HTTPHeaders()
        forged.set("Authorization", "Bearer kl_\(String(repeating: "F", count: 43))")
        forged.set("Content-Type", "application/json")
        XCTAssertEqual(try screenedThenHandled(head, headers: forged).status, 401)
        var other = HTTPHeaders()
        other.set("Authorization", "Bearer \(mum)")
        other.set("Content-Type", "text/plain")
        XCTAssertEqual(try screenedThenHandled(head, headers: other).status, 415)
        // The same fields built apart: looked up again, and served.
        var copy = HTTPHeaders()
        copy.set("Authorization", "Bearer \(mum)")
        copy.set("Content-Type", "application/json")
        XCTAssertEqual(try screenedThenHandled(head, headers: copy).status, 201)
    }
}
