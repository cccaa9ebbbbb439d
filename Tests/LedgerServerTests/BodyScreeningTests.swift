import Foundation
import Glibc
import HTTPServer
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// Bodies as an attacker sends them: wide objects cost time linear in their size and are
/// refused at once, problems name only a few fields, and what a request's head decides is
/// answered before a byte of its body is buffered.
final class BodyScreeningTests: XCTestCase {
    // MARK: - Wide objects

    /// CPU time of the calling thread, in seconds.
    private func threadCPU() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    private func wideObject(_ members: Int, prefix: String = "m") -> [UInt8] {
        var s = "{"
        s.reserveCapacity(members * 12)
        for i in 0..<members {
            if i > 0 { s += "," }
            s += "\"\(prefix)\(i)\":1"
        }
        return Array((s + "}").utf8)
    }

    /// The audit's body: 64k unknown members (693 KB) took 7 s of a core. Parsing stops at
    /// the first object past the member cap; the whole refusal, answer included, takes
    /// well under 10 ms.
    func testA64kMemberBodyIsRefusedInUnder10msOfCPU() throws {
        let body = wideObject(65_536)
        XCTAssertGreaterThan(body.count, 600_000)
        // Once for warm-up (first use of the types), then measured.
        _ = Self.refusal(body)
        let start = threadCPU()
        let problem = Self.refusal(body)
        let cpu = threadCPU() - start
        XCTAssertLessThan(cpu, 0.010, "refusing a 64k-member body took \(cpu * 1000) ms of CPU")
        XCTAssertEqual(problem?.status, 422)
        XCTAssertEqual(problem?.code, "validation_failed")
        XCTAssertLessThan(problem?.response.body.count ?? .max, 1024)
    }

    /// The answer to `bytes` as a request body (nil: it was accepted).
    private static func refusal(_ bytes: [UInt8]) -> APIError? {
        do {
            var b = try JSONBody.parse(bytes)
            b.allowOnly(["handle", "displayName", "deviceName"])
            try b.check()
            return nil
        } catch let e as APIError {
            _ = e.response
            return e
        } catch {
            return nil
        }
    }

    /// Time grows linearly with the number of members under the cap and stays flat past it,
    /// nested objects included.
    func testObjectsPastTheMemberCapAreRefusedWhereverTheyAre() throws {
        for (before, after) in [(#"{"children":["#, "]}"), (#"{"a":"#, "}"), (#"{"transactions":[1,2,"#, "]}")] {
            let json = before
            let bytes = Array(before.utf8) + wideObject(JSONBody.maxMembers + 1) + Array(after.utf8)
            do {
                _ = try JSONBody.parse(bytes)
                XCTFail("accepted \(json)")
            } catch let e as APIError {
                XCTAssertEqual(e.status, 422, json)
                XCTAssertEqual(e.code, "validation_failed", json)
                XCTAssertNotNil(e.fields["body"], json)
            }
        }
        // At the cap it parses (a request type's own check then names the unknown members).
        XCTAssertNoThrow(try JSONBody.parse(wideObject(JSONBody.maxMembers)))
    }

    /// A problem names at most a few fields and says how many more there are.
    func testAProblemListsAFewFieldsAndCountsTheRest() throws {
        var b = try JSONBody.parse(wideObject(40, prefix: "zz"))
        b.allowOnly(["name"])
        XCTAssertEqual(b.errors.count, APIError.listedFields)
        XCTAssertThrowsError(try b.check()) { error in
            let e = error as! APIError
            XCTAssertEqual(e.fields.count, APIError.listedFields)
            XCTAssertTrue(e.detail.hasSuffix("and 35 more."), e.detail)
        }
        // Many invalid records of one push: the problem still names five.
        var many: [String: String] = [:]
        for i in 0..<400 { many["children[\(i)].id"] = "is required" }
        let e = APIError.validation(many)
        XCTAssertEqual(e.fields.count, 5)
        XCTAssertTrue(e.detail.hasSuffix("and 395 more."), e.detail)
        XCTAssertLessThan(e.response.body.count, 1024)
    }

    /// Over HTTP: registration (no token, open to anyone), a PATCH and a pushed record, each
    /// with many unknown members, answer a short problem.
    func testWideBodiesOverHTTPAnswerShortProblems() throws {
        let s = try TestServer(.live)
        defer { s.stop() }
        let (_, token) = s.signup("mum")
        let h = s.household(token)
        let child = s.child(token, household: h)
        var members: [String: JSONValue] = [:]
        for i in 0..<60 { members["unknown\(i)"] = .int(Int64(i)) }

        let wide = JSONValue.object(JSONObject(uniquePairs: members.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))
        for (method, path, auth) in [("POST", "/v1/accounts", nil as String?),
                                     ("PATCH", "/v1/households/\(h)/children/\(child)", token),
                                     ("PATCH", "/v1/households/\(h)", token)] {
            let r = s.call(method, path, token: auth, json: wide)
            XCTAssertEqual(r.status, 422, path)
            XCTAssertEqual(r.code, "validation_failed", path)
            XCTAssertLessThanOrEqual(r.json["fields"]?.objectValue?.count ?? 99, APIError.listedFields, path)
            XCTAssertLessThan(r.body.count, 1500, path)
        }
        var record = members
        record["id"] = .string(UUID().lowercased)
        let push = s.call("POST", "/v1/households/\(h)/changes", token: token, json: .obj(["children": .array([
            .object(JSONObject(uniquePairs: record.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }))])]))
        XCTAssertLessThan(push.body.count, 2000)
        XCTAssertTrue([200, 422].contains(push.status), "\(push.status)")
    }

    /// A registration body that is refused still counts toward the address's limit, so
    /// refused bodies cannot be sent without end.
    func testRefusedRegistrationBodiesCountTowardTheLimit() throws {
        let s = try TestServer(.live) { $0.registrationsPerHour = 3 }
        defer { s.stop() }
        for i in 0..<3 {
            let r = s.call("POST", "/v1/accounts", json: .obj(["handle": "x", "displayName": "Mum", "junk\(i)": 1]))
            XCTAssertEqual(r.status, 422, "attempt \(i)")
        }
        let r = s.call("POST", "/v1/accounts", json: .obj(["handle": "mum", "displayName": "Mum"]))
        XCTAssertEqual(r.status, 429)
        XCTAssertEqual(r.code, "registration_rate_limited")
        XCTAssertNotNil(r.header("Retry-After"))
    }

    // MARK: - The head decides

    static func connect(_ port: Int, from source: String = "127.0.0.1", timeout: Int = 5) -> Int32 {
        LoopbackSocket.connect(port, from: source, timeout: timeout)
    }

    static func send(_ fd: Int32, _ text: String) {
        _ = text.withCString { Glibc.send(fd, $0, strlen($0), Int32(MSG_NOSIGNAL)) }
    }

    /// The status line and the text of one response head, read until its end (or close).
    static func readHead(_ fd: Int32) -> String {
        var out: [UInt8] = []
        var byte: UInt8 = 0
        while recv(fd, &byte, 1, 0) == 1 {
            out.append(byte)
            if out.count >= 4 && out.suffix(4) == [13, 10, 13, 10] { break }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Heads that announce 4 MiB less a byte and send none of it are answered at once.
    func testWhatTheHeadDecidesIsAnsweredBeforeTheBody() throws {
        let s = try TestServer(.live)
        defer { s.stop() }
        let (_, token) = s.signup("mum")
        let h = s.household(token)
        let length = 4 * 1024 * 1024 - 1
        let cases: [(String, String, String)] = [
            ("POST /v1/nothing-here", "Content-Type: application/json\r\n", "404"),
            ("DELETE /v1/accounts", "Content-Type: application/json\r\n", "405"),
            ("POST /v1/households/\(h)/children", "Content-Type: text/plain\r\nAuthorization: Bearer \(token)\r\n", "415"),
            ("POST /v1/households/\(h)/children", "Authorization: Bearer \(token)\r\n", "415"),
            ("POST /v1/households/\(h)/children", "Content-Type: application/json\r\n", "401"),
            ("POST /v1/households/\(h)/children",
             "Content-Type: application/json\r\nAuthorization: Bearer kl_\(String(repeating: "A", count: 43))\r\n", "401"),
            ("POST /v1/app-store/notifications", "Content-Type: application/json\r\n", "413"),
        ]
        for (line, fields, status) in cases {
            let fd = Self.connect(s.app.port)
            XCTAssertGreaterThanOrEqual(fd, 0)
            Self.send(fd, "\(line) HTTP/1.1\r\nHost: x\r\n\(fields)Content-Length: \(length)\r\n\r\n")
            let head = Self.readHead(fd)
            close(fd)
            XCTAssertTrue(head.hasPrefix("HTTP/1.1 \(status) "), "\(line) \(fields): \(head)")
            XCTAssertTrue(head.lowercased().contains("connection: close"), head)
        }
        // A chunked body to a route with a small limit is refused as soon as it passes it.
        let fd = Self.connect(s.app.port)
        Self.send(fd, "POST /v1/app-store/notifications HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  + "Transfer-Encoding: chunked\r\n\r\n")
        let chunk = String(repeating: "a", count: 40_000)
        Self.send(fd, String(chunk.count, radix: 16) + "\r\n" + chunk + "\r\n")
        Self.send(fd, String(chunk.count, radix: 16) + "\r\n")
        let head = Self.readHead(fd)
        close(fd)
        XCTAssertTrue(head.hasPrefix("HTTP/1.1 413 "), head)
        // A valid request still works, body and all.
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children", token: token, json: .obj(["name": "Ada"])).status, 201)
    }

    /// Past the body budget, new bodies get 503 with Retry-After; what the others hold is
    /// given back when they finish or close.
    func testBodiesPastTheBudgetGet503() throws {
        let s = try TestServer(.live) { $0.http.maxBufferedBodyBytes = 8 * 1024 * 1024 }
        defer { s.stop() }
        let (_, token) = s.signup("mum")
        let h = s.household(token)
        let head = "POST /v1/households/\(h)/changes HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            + "Authorization: Bearer \(token)\r\nContent-Length: \(4 * 1024 * 1024 - 1)\r\n\r\n"
        let part = "[" + String(repeating: " ", count: 3 * 1024 * 1024)
        var held: [Int32] = []
        var refused = 0
        for _ in 0..<4 {
            let fd = Self.connect(s.app.port)
            Self.send(fd, head)
            Self.send(fd, part)
            usleep(200_000)
            var poll = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            if Glibc.poll(&poll, 1, 300) == 1 {
                let answer = Self.readHead(fd)
                XCTAssertTrue(answer.hasPrefix("HTTP/1.1 503 "), answer)
                XCTAssertTrue(answer.contains("Retry-After: 1"), answer)
                refused += 1
                close(fd)
            } else {
                held.append(fd)
            }
        }
        XCTAssertGreaterThanOrEqual(refused, 2, "an 8 MiB budget holds at most two 3 MiB bodies")
        for fd in held { close(fd) }
        // Given back: a new body is read and answered.
        let deadline = Date().addingTimeInterval(5)
        var status = 0
        repeat {
            status = s.call("POST", "/v1/households/\(h)/children", token: token, json: .obj(["name": "Ada"])).status
            if status != 201 { usleep(50_000) }
        } while status != 201 && Date() < deadline
        XCTAssertEqual(status, 201)
    }

    /// The audit's memory attack: 200 connections from 10 addresses, each announcing 4 MiB
    /// less a byte and sending it to a route that refuses it from the head. The server's
    /// resident memory stays within 100 MB of what it was idle.
    func testTwoHundredParkedBodiesKeepMemoryFlat() throws {
        try TestServer.requireSQLite("measures the server process alone")
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-rss-\(UUID().uuidString)").path
        let server = try ServerProcess(binary: ServerProcess.binary(), dataDir: dataDir, arguments: [])
        defer {
            server.kill9()
            try? FileManager.default.removeItem(atPath: dataDir)
        }
        let http = LoopbackHTTP(port: server.port)
        let signup = http.call("POST", "/v1/accounts", json: .obj(["handle": "mum", "displayName": "Mum"]))
        guard let token = signup.json["token"]?["secret"]?.stringValue else { return XCTFail("no token: \(signup.status)") }
        let idle = Self.residentBytes(pid: server.process.processIdentifier)
        let length = 4 * 1024 * 1024 - 1
        let targets: [(String, String)] = [
            ("POST /v1/unknown", "Content-Type: application/json\r\n"),
            ("PUT /v1/me", "Content-Type: application/json\r\nAuthorization: Bearer \(token)\r\n"),
            ("POST /v1/tokens", "Content-Type: text/plain\r\nAuthorization: Bearer \(token)\r\n"),
            ("POST /v1/households", "Content-Type: application/json\r\n"),
            ("POST /v1/app-store/notifications", "Content-Type: application/json\r\n"),
        ]
        var fds: [Int32] = []
        let chunk = [UInt8](repeating: 0x20, count: 256 * 1024)
        for i in 0..<200 {
            let fd = Self.connect(server.port, from: "127.0.0.\(1 + i % 10)", timeout: 1)
            guard fd >= 0 else { continue }
            var flags = fcntl(fd, F_GETFL)
            flags |= O_NONBLOCK
            _ = fcntl(fd, F_SETFL, flags)
            let (line, fields) = targets[i % targets.count]
            Self.send(fd, "\(line) HTTP/1.1\r\nHost: x\r\n\(fields)Content-Length: \(length)\r\n\r\n")
            fds.append(fd)
        }
        defer { for fd in fds { close(fd) } }
        // Push the bodies as far as the server takes them, for at most a few seconds.
        var sent = [Int](repeating: 0, count: fds.count)
        let deadline = Date().addingTimeInterval(4)
        var progress = true
        while progress && Date() < deadline {
            progress = false
            for (k, fd) in fds.enumerated() where sent[k] < length {
                let n = chunk.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, min($0.count, length - sent[k]), Int32(MSG_NOSIGNAL)) }
                if n > 0 { sent[k] += n; progress = true }
            }
        }
        let loaded = Self.residentBytes(pid: server.process.processIdentifier)
        XCTAssertLessThan(loaded - idle, 100 * 1024 * 1024,
                          "RSS \(idle / 1_048_576) MB idle, \(loaded / 1_048_576) MB with 200 parked bodies")
        // The server still answers.
        XCTAssertEqual(http.call("GET", "/healthz").status, 200)
    }

    /// VmRSS of a process, in bytes.
    static func residentBytes(pid: Int32) -> Int {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            let kb = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
            return kb * 1024
        }
        return 0
    }
}
