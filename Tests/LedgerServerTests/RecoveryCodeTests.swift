import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
@testable import LedgerStorageSQLite
import XCTest

/// Recovery codes over HTTP (both backends), and their limits driven far past what they allow.
final class RecoveryCodeTests: XCTestCase {
    var s: TestServer!

    override func tearDown() { s?.stop() }

    /// `mode`: `.live` for what only the HTTP layer decides (a body refused from its head).
    func server(_ mode: TestServer.Mode = .router, _ configure: (inout LedgerAppConfiguration) -> Void = { _ in }) throws {
        s = try TestServer(mode) {
            $0.trustedProxies = ["127.0.0.1"]
            configure(&$0)
        }
    }

    func issue(_ token: String) -> [String] {
        let r = s.call("POST", "/v1/me/recovery-codes", token: token)
        XCTAssertEqual(r.status, 201, String(decoding: r.body, as: UTF8.self))
        return r.json["codes"]?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    func recover(_ handle: String, _ code: String, device: String? = nil, revokeOthers: Bool? = nil,
                 from address: String = "10.0.0.1") -> TestServer.Reply {
        var body: JSONObject = ["handle": .string(handle), "code": .string(code)]
        if let device { body["deviceName"] = .string(device) }
        if let revokeOthers { body["revokeOtherTokens"] = .bool(revokeOthers) }
        return s.call("POST", "/v1/accounts/recover", json: .object(body), headers: ["X-Forwarded-For": address])
    }

    static let format = try! NSRegularExpression(pattern: "^([0-9ABCDEFGHJKMNPQRSTVWXYZ]{4}-){3}[0-9ABCDEFGHJKMNPQRSTVWXYZ]{4}$")

    func testIssueAndSummary() throws {
        try server()
        let (_, token) = s.signup(TestServer.handle("r"))
        let none = s.call("GET", "/v1/me/recovery-codes", token: token)
        XCTAssertEqual(none.status, 200)
        XCTAssertEqual(none.json["remaining"], .int(0))
        XCTAssertEqual(none.json["createdAt"], .null)

        let r = s.call("POST", "/v1/me/recovery-codes", token: token)
        XCTAssertEqual(r.status, 201)
        let codes = r.json["codes"]?.arrayValue?.compactMap(\.stringValue) ?? []
        XCTAssertEqual(codes.count, 10)
        XCTAssertEqual(Set(codes).count, 10)
        for c in codes {
            XCTAssertNotNil(Self.format.firstMatch(in: c, range: NSRange(c.startIndex..., in: c)), c)
            // 16 characters of a 32-symbol alphabet: 80 bits.
            XCTAssertEqual(c.filter { $0 != "-" }.count * 5, 80)
        }
        let summary = s.call("GET", "/v1/me/recovery-codes", token: token).json
        XCTAssertEqual(summary["remaining"], .int(10))
        XCTAssertEqual(summary["createdAt"], r.json["createdAt"])
    }

    func testRecoverSignsInOnceAndTheOtherDevicesSeeIt() throws {
        try server()
        let handle = TestServer.handle("r")
        let (account, token) = s.signup(handle)
        let codes = issue(token)
        let r = recover(handle, codes[3].lowercased().replacingOccurrences(of: "-", with: " "), device: "New phone")
        XCTAssertEqual(r.status, 201, String(decoding: r.body, as: UTF8.self))
        XCTAssertEqual(r.json["account"]?["id"]?.stringValue, account)
        let secret = r.json["token"]!["secret"]!.stringValue!
        XCTAssertEqual(s.call("GET", "/v1/me", token: secret).status, 200)
        XCTAssertEqual(s.call("GET", "/v1/me", token: token).status, 200, "the other devices stay signed in")
        let tokens = s.call("GET", "/v1/tokens", token: token).json["items"]?.arrayValue ?? []
        XCTAssertTrue(tokens.contains { $0["id"]?.stringValue == r.json["token"]?["id"]?.stringValue
                                        && $0["deviceName"]?.stringValue == "New phone" })
        XCTAssertEqual(s.call("GET", "/v1/me/recovery-codes", token: token).json["remaining"], .int(9))

        let again = recover(handle, codes[3], from: "10.0.0.2")
        XCTAssertEqual(again.status, 401)
        XCTAssertEqual(again.code, "recovery_failed")
        XCTAssertEqual(recover(handle, codes[4], from: "10.0.0.3").json["token"]?["deviceName"]?.stringValue, "Recovered device")
    }

    func testANewSetReplacesTheEarlierOne() throws {
        try server()
        let handle = TestServer.handle("r")
        let (_, token) = s.signup(handle)
        let first = issue(token)
        let second = issue(token)
        XCTAssertTrue(Set(first).isDisjoint(with: second))
        XCTAssertEqual(recover(handle, first[0]).code, "recovery_failed")
        XCTAssertEqual(recover(handle, second[0], from: "10.0.0.2").status, 201)
        XCTAssertEqual(s.call("GET", "/v1/me/recovery-codes", token: token).json["remaining"], .int(9))
    }

    func testRevokeOtherTokens() throws {
        try server()
        let handle = TestServer.handle("r")
        let (_, token) = s.signup(handle)
        let spare = s.call("POST", "/v1/tokens", token: token, json: .obj(["deviceName": "Old tablet"])).json["secret"]!.stringValue!
        let codes = issue(token)
        let r = recover(handle, codes[0], revokeOthers: true)
        XCTAssertEqual(r.status, 201)
        XCTAssertEqual(s.call("GET", "/v1/me", token: token).status, 401)
        XCTAssertEqual(s.call("GET", "/v1/me", token: spare).status, 401)
        let secret = r.json["token"]!["secret"]!.stringValue!
        let tokens = s.call("GET", "/v1/tokens", token: secret).json["items"]?.arrayValue ?? []
        XCTAssertEqual(tokens.count, 1)
    }

    /// An unknown handle, a wrong code, a used code and a code of another account get the
    /// very same answer (status, body, headers but the date).
    func testEveryFailureIsOneAnswer() throws {
        try server()
        let handle = TestServer.handle("r"), other = TestServer.handle("o")
        let (_, token) = s.signup(handle)
        let (_, otherToken) = s.signup(other)
        let codes = issue(token)
        let otherCodes = issue(otherToken)
        XCTAssertEqual(recover(handle, codes[0]).status, 201)
        var replies: [String: TestServer.Reply] = [:]
        let attempts = [("unknown handle", TestServer.handle("nobody"), codes[1]), ("wrong code", handle, "0000-0000-0000-0000"),
                        ("used code", handle, codes[0]), ("another account's code", handle, otherCodes[0]),
                        ("malformed code", handle, "not a code"), ("invalid handle", "Not A Handle!", codes[1])]
        for (i, (kind, h, c)) in attempts.enumerated() { replies[kind] = recover(h, c, from: "10.0.1.\(i)") }
        let reference = replies["wrong code"]!
        XCTAssertEqual(reference.status, 401)
        XCTAssertEqual(reference.code, "recovery_failed")
        XCTAssertNotNil(reference.header("WWW-Authenticate"))
        for (kind, r) in replies {
            XCTAssertEqual(r.status, reference.status, kind)
            XCTAssertEqual(r.body, reference.body, kind)
            XCTAssertEqual(r.answerHeaders, reference.answerHeaders, kind)
        }
        XCTAssertEqual(s.call("GET", "/v1/me/recovery-codes", token: token).json["remaining"], .int(9), "no failure used a code")
    }

    /// An account at its token cap gets 409 `too_many_tokens` and keeps its code, unless it
    /// revokes its other tokens; a body over 4 KiB is 413.
    func testTheTokenCapAndTheBodyLimit() throws {
        try server(.live) { $0.maxTokensPerAccount = 1 }
        let handle = TestServer.handle("r")
        let (_, token) = s.signup(handle)
        let codes = issue(token)
        let full = recover(handle, codes[0])
        XCTAssertEqual(full.status, 409)
        XCTAssertEqual(full.code, "too_many_tokens")
        XCTAssertEqual(s.call("GET", "/v1/me/recovery-codes", token: token).json["remaining"], .int(10))
        XCTAssertEqual(recover(handle, codes[0], revokeOthers: true, from: "10.0.0.2").status, 201)
        let big = s.call("POST", "/v1/accounts/recover", json: .obj(["handle": "abc", "code": .string(String(repeating: "A", count: 5000))]))
        XCTAssertEqual(big.status, 413)
    }

    func testMalformedBodiesAre422() throws {
        try server()
        for body: JSONValue in [.obj(["handle": "abc"]), .obj(["code": "x"]), .obj(["handle": 1, "code": "x"]),
                                .obj(["handle": "abc", "code": "x", "revokeOtherTokens": "yes"]),
                                .obj(["handle": "abc", "code": "x", "more": 1]),
                                .obj(["handle": .string(String(repeating: "a", count: 65)), "code": "x"])] {
            let r = s.call("POST", "/v1/accounts/recover", json: body)
            XCTAssertEqual(r.status, 422, body.serializedString)
            XCTAssertEqual(r.code, "validation_failed")
        }
    }

    /// Per handle: failures from any number of addresses count, unknown handles alike (a 429
    /// tells nothing of whether a handle exists), and past the limit the right code is
    /// refused too. Per address: failures over any handles count.
    func testPerHandleAndPerAddressLimitsHoldOverHTTP() throws {
        try server {
            $0.accountAccess.recoveryFailuresPerHandlePerHour = 5
            $0.accountAccess.recoveryFailuresPerMinute = 7
        }
        let handle = TestServer.handle("r")
        let (_, token) = s.signup(handle)
        let codes = issue(token)
        let nobody = TestServer.handle("nobody")
        for target in [handle, nobody] {
            var statuses: [Int: Int] = [:]
            for i in 0..<200 {
                let r = recover(target, "0000-0000-0000-\(String(format: "%04d", i))", from: "10.2.\(i / 200).\(i % 200)")
                statuses[r.status, default: 0] += 1
                if r.status == 429 { XCTAssertNotNil(r.header("Retry-After")) }
            }
            XCTAssertEqual(statuses[401], 5, "\(target): \(statuses)")
            XCTAssertEqual(statuses[429], 195, "\(target): \(statuses)")
        }
        XCTAssertEqual(recover(handle, codes[0], from: "198.51.100.1").status, 429, "the right code, once the handle is limited")

        // Per address, over handles that are not limited.
        var statuses: [Int: Int] = [:]
        for i in 0..<200 {
            let r = recover(TestServer.handle("h\(i)"), "0000-0000-0000-0000", from: "192.0.2.55")
            statuses[r.status, default: 0] += 1
        }
        XCTAssertEqual(statuses[401], 7, "\(statuses)")
        XCTAssertEqual(statuses[429], 193, "\(statuses)")
    }

    /// 10,000 attempts on one handle from 10,000 addresses, in concurrent writes through the
    /// storage rule (on PostgreSQL from every connection of the pool): exactly the allowed
    /// number is looked at, and the right code is refused afterwards.
    func testPerHandleLimitHoldsOverTenThousandTries() throws {
        try server()
        let handle = TestServer.handle("r")
        let (_, token) = s.signup(handle)
        let right = HumanCode(reading: issue(token)[0], length: 16)!
        let limits = CodeAttemptLimits(perAddress: AttemptLimit(scope: "recovery-address", limit: 10, windowMs: 60_000),
                                       perHandle: AttemptLimit(scope: "recovery-handle", limit: 10, windowMs: 3_600_000))
        let now = Timestamp.nowMs()
        let outcomes = s.concurrentWrites(10_000) { i, w in
            try w.recover(handle: handle, code: HumanCode.generate(length: 16), address: "v4:10.\(i >> 16).\(i >> 8 & 255).\(i & 255)",
                          deviceName: "x", revokeOtherTokens: false, limits: limits, now: now)
        }
        var failed = 0, limited = 0
        for o in outcomes {
            switch try o.get() {
            case .failed(let reason): failed += 1; XCTAssertEqual(reason, .wrongCode)
            case .limited(_, let scope): limited += 1; XCTAssertEqual(scope, "recovery-handle")
            case .recovered: XCTFail("a guess recovered the account")
            }
        }
        XCTAssertEqual(failed, 10)
        XCTAssertEqual(limited, 9_990)
        let afterwards = try s.write { w in
            try w.recover(handle: handle, code: right, address: "v4:203.0.113.1", deviceName: "x", revokeOtherTokens: false,
                          limits: limits, now: now)
        }
        guard case .limited = afterwards else { return XCTFail("\(afterwards)") }
        XCTAssertEqual(s.call("GET", "/v1/me/recovery-codes", token: token).json["remaining"], .int(10))
    }

    /// Failed recoveries are in the server's log with the reason the caller is not told.
    func testFailuresAreLogged() throws {
        let binary = try ServerProcess.binary()
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-rc-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        let server = try ServerProcess(binary: binary, dataDir: data, arguments: ["--registrations-per-hour", "0"])
        defer { server.kill9() }
        let http = LoopbackHTTP(port: server.port)
        let handle = TestServer.handle("l")
        XCTAssertEqual(http.call("POST", "/v1/accounts", json: .obj(["handle": .string(handle), "displayName": "L"])).status, 201)
        XCTAssertEqual(http.call("POST", "/v1/accounts/recover", json: .obj(["handle": .string(handle), "code": "0000-0000-0000-0000"])).status, 401)
        XCTAssertEqual(http.call("POST", "/v1/accounts/recover", json: .obj(["handle": "nobody-here", "code": "0000-0000-0000-0000"])).status, 401)
        usleep(300_000)
        let lines = ((try? String(contentsOfFile: server.logPath, encoding: .utf8)) ?? "").split(separator: "\n")
            .compactMap { try? JSONValue.parse(String($0)) }.filter { $0["event"]?.stringValue == "recovery_failed" }
        XCTAssertEqual(lines.count, 2, server.logTail)
        XCTAssertEqual(lines.first?["handle"]?.stringValue, handle)
        XCTAssertEqual(lines.first?["reason"]?.stringValue, "wrongCode")
        XCTAssertEqual(lines.first?["address"]?.stringValue, "127.0.0.1")
        XCTAssertEqual(lines.last?["reason"]?.stringValue, "unknownHandle")
    }
}
