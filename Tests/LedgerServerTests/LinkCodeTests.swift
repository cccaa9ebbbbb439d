import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
@testable import LedgerStorageSQLite
import XCTest

/// `POST /v1/link-codes` and `POST /v1/link-codes/redeem` over HTTP (both backends), and
/// their limits driven far past what they allow.
final class LinkCodeTests: XCTestCase {
    var s: TestServer!

    override func tearDown() { s?.stop() }

    /// `mode`: `.live` for what only the HTTP layer decides (a body refused from its head).
    func server(_ mode: TestServer.Mode = .router,
                _ configure: (inout LedgerAppConfiguration) -> Void = { _ in }) throws -> TestServer {
        s = try TestServer(mode) {
            $0.trustedProxies = ["127.0.0.1"]
            configure(&$0)
        }
        return s
    }

    func issue(_ token: String) -> (code: String, reply: TestServer.Reply) {
        let r = s.call("POST", "/v1/link-codes", token: token)
        XCTAssertEqual(r.status, 201, String(decoding: r.body, as: UTF8.self))
        return (r.json["code"]?.stringValue ?? "", r)
    }

    func redeem(_ code: String, device: String? = nil, from address: String = "10.0.0.1") -> TestServer.Reply {
        var body: JSONObject = ["code": .string(code)]
        if let device { body["deviceName"] = .string(device) }
        return s.call("POST", "/v1/link-codes/redeem", json: .object(body), headers: ["X-Forwarded-For": address])
    }

    /// The stored codes made to expire (a test hook: the lifetime is the contract's ten minutes).
    func expireAll() throws {
        try s.execute("UPDATE link_codes SET expires_at = ?", [.integer(Timestamp.nowMs() - 1000)],
                      postgres: "UPDATE link_codes SET expires_at = now() - interval '1 second'")
    }

    static let format = try! NSRegularExpression(pattern: "^[0-9ABCDEFGHJKMNPQRSTVWXYZ]{4}-[0-9ABCDEFGHJKMNPQRSTVWXYZ]{4}-[0-9ABCDEFGHJKMNPQRSTVWXYZ]{4}$")

    func matches(_ code: String) -> Bool {
        Self.format.firstMatch(in: code, range: NSRange(code.startIndex..., in: code)) != nil
    }

    // MARK: issue and redeem

    func testIssueAndRedeem() throws {
        _ = try server()
        let (account, token) = s.signup(TestServer.handle("a"))
        let before = Timestamp.nowMs()
        let (code, r) = issue(token)
        XCTAssertTrue(matches(code), code)
        XCTAssertEqual(r.json["url"]?.stringValue, "kidledger://link?code=" + code)
        let expires = Timestamp.parse(r.json["expiresAt"]!.stringValue!)!
        XCTAssertEqual(Double(expires - before), 600_000, accuracy: 5_000)

        let redeemed = redeem(code, device: "Tablet")
        XCTAssertEqual(redeemed.status, 201, String(decoding: redeemed.body, as: UTF8.self))
        XCTAssertEqual(redeemed.json["account"]?["id"]?.stringValue, account)
        XCTAssertEqual(redeemed.json["token"]?["deviceName"]?.stringValue, "Tablet")
        let secret = redeemed.json["token"]!["secret"]!.stringValue!
        let me = s.call("GET", "/v1/me", token: secret)
        XCTAssertEqual(me.json["account"]?["id"]?.stringValue, account)
        // The first device sees the new one.
        let tokens = s.call("GET", "/v1/tokens", token: token).json["items"]?.arrayValue ?? []
        XCTAssertTrue(tokens.contains { $0["deviceName"]?.stringValue == "Tablet" })

        // Without a name the device is "Linked device".
        let second = redeem(issue(token).code)
        XCTAssertEqual(second.json["token"]?["deviceName"]?.stringValue, "Linked device")
    }

    func testCodesAreSingleUse() throws {
        _ = try server()
        let (_, token) = s.signup(TestServer.handle("a"))
        let code = issue(token).code
        XCTAssertEqual(redeem(code).status, 201)
        let again = redeem(code, from: "10.0.0.2")
        XCTAssertEqual(again.status, 404)
        XCTAssertEqual(again.code, "link_code_invalid")
    }

    /// Many devices redeeming one code at once (on PostgreSQL on several connections): one wins.
    func testOneCodeRedeemsOnceUnderConcurrentRedemptions() throws {
        _ = try server()
        let (_, token) = s.signup(TestServer.handle("a"))
        let code = HumanCode(reading: issue(token).code, length: LinkCodeRecord.length)!
        let limits = AccountAccessConfiguration().linkCodeLimits
        let now = Timestamp.nowMs()
        let outcomes = s.concurrentWrites(50) { i, w in
            try w.redeemLinkCode(code, address: "v4:10.3.0.\(i)", deviceName: "x", limits: limits, now: now)
        }
        let redeemed = try outcomes.filter { if case .redeemed = try $0.get() { return true } else { return false } }
        XCTAssertEqual(redeemed.count, 1)
    }

    func testCodesAreReadCaseInsensitivelyWithoutHyphensOrSpaces() throws {
        _ = try server()
        let (_, token) = s.signup(TestServer.handle("a"))
        let spellings: [(String) -> String] = [
            { $0.lowercased() },
            { $0.replacingOccurrences(of: "-", with: "") },
            { $0.replacingOccurrences(of: "-", with: " ") },
            { " " + $0.lowercased().replacingOccurrences(of: "-", with: " - ") + " " },
        ]
        for (i, spell) in spellings.enumerated() {
            let code = issue(token).code
            let r = redeem(spell(code), from: "10.0.1.\(i)")
            XCTAssertEqual(r.status, 201, "spelling \(i) of \(code): \(String(decoding: r.body, as: UTF8.self))")
        }
    }

    func testExpiredCodesAreRefused() throws {
        _ = try server()
        let (_, token) = s.signup(TestServer.handle("a"))
        let code = issue(token).code
        try expireAll()
        let r = redeem(code)
        XCTAssertEqual(r.status, 404)
        XCTAssertEqual(r.code, "link_code_invalid")
    }

    /// Used, expired, unknown and malformed codes get the very same answer: status, body and
    /// headers (only the date differs).
    func testRefusalsAreIndistinguishable() throws {
        _ = try server()
        let (_, token) = s.signup(TestServer.handle("a"))
        let used = issue(token).code
        XCTAssertEqual(redeem(used).status, 201)
        let expired = issue(token).code
        try expireAll()
        let unknown = "0000-0000-0000"
        var replies: [String: TestServer.Reply] = [:]
        for (i, (kind, code)) in [("used", used), ("expired", expired), ("unknown", unknown), ("malformed", "not a code")].enumerated() {
            replies[kind] = redeem(code, from: "10.0.2.\(i)")
        }
        let reference = replies["unknown"]!
        XCTAssertEqual(reference.status, 404)
        XCTAssertEqual(reference.code, "link_code_invalid")
        for (kind, r) in replies {
            XCTAssertEqual(r.status, reference.status, kind)
            XCTAssertEqual(r.body, reference.body, kind)
            XCTAssertEqual(r.answerHeaders, reference.answerHeaders, kind)
        }
    }

    func testMalformedBodiesAre422() throws {
        _ = try server()
        for body: JSONValue in [.obj([:]), .obj(["code": 5]), .obj(["code": .string(String(repeating: "A", count: 65))]),
                                .obj(["code": "AAAA-AAAA-AAAA", "extra": true]), .obj(["code": "AAAA-AAAA-AAAA", "deviceName": ""])] {
            let r = s.call("POST", "/v1/link-codes/redeem", json: body)
            XCTAssertEqual(r.status, 422, body.serializedString)
            XCTAssertEqual(r.code, "validation_failed")
        }
        XCTAssertEqual(s.call("POST", "/v1/link-codes/redeem", rawBody: Data("{".utf8), headers: ["Content-Type": "application/json"]).status, 400)
    }

    /// A body over 4 KiB is refused from its Content-Length, unread.
    func testLargeBodiesAre413() throws {
        _ = try server(.live)
        let r = s.call("POST", "/v1/link-codes/redeem", json: .obj(["code": .string(String(repeating: "A", count: 5000))]))
        XCTAssertEqual(r.status, 413)
        XCTAssertEqual(r.code, "payload_too_large")
    }

    /// An account at its token cap gets 409 `too_many_tokens`, and the code stays usable.
    func testTheTokenCapHoldsAndKeepsTheCode() throws {
        _ = try server { $0.maxTokensPerAccount = 2 }
        let (_, token) = s.signup(TestServer.handle("a"))
        let spare = s.call("POST", "/v1/tokens", token: token, json: .obj(["deviceName": "Spare"])).json["id"]!.stringValue!
        let code = issue(token).code
        let full = redeem(code)
        XCTAssertEqual(full.status, 409)
        XCTAssertEqual(full.code, "too_many_tokens")
        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(spare)", token: token).status, 204)
        XCTAssertEqual(redeem(code, from: "10.0.4.1").status, 201)
    }

    /// An account keeps at most five live codes: a sixth replaces the oldest.
    func testAnAccountHoldsFiveLiveCodes() throws {
        _ = try server()
        let (_, token) = s.signup(TestServer.handle("a"))
        // Each in a millisecond of its own: "oldest" is by the code's creation time.
        let codes = (0..<6).map { _ in
            defer { Thread.sleep(forTimeInterval: 0.002) }
            return issue(token).code
        }
        XCTAssertEqual(redeem(codes[0], from: "10.0.3.1").code, "link_code_invalid")
        for (i, code) in codes.dropFirst().enumerated() {
            XCTAssertEqual(redeem(code, from: "10.0.3.\(i + 2)").status, 201)
        }
    }

    // MARK: limits

    /// Past the failures one address may make in a minute, every redemption from it is 429
    /// with Retry-After — the right code too — while other addresses are served. Driven over
    /// HTTP a few hundred times.
    func testPerAddressLimitHoldsOverHTTP() throws {
        _ = try server { $0.accountAccess.linkCodeFailuresPerMinute = 5 }
        let (_, token) = s.signup(TestServer.handle("a"))
        let code = issue(token).code
        var statuses: [Int: Int] = [:]
        for i in 0..<300 {
            let r = redeem(String(format: "ZZZZ-ZZZZ-%04d", i), from: "192.0.2.7")
            statuses[r.status, default: 0] += 1
            if r.status == 429 {
                XCTAssertEqual(r.code, "rate_limited")
                XCTAssertNotNil(Int(r.header("Retry-After") ?? ""), "Retry-After")
            }
        }
        XCTAssertEqual(statuses[404], 5, "\(statuses)")
        XCTAssertEqual(statuses[429], 295, "\(statuses)")
        XCTAssertEqual(redeem(code, from: "192.0.2.7").status, 429, "the right code from a limited address")
        // An IPv6 client is limited by its /64, whatever address of it it takes.
        for i in 0..<5 { XCTAssertEqual(redeem("ZZZZ-ZZZZ-ZZZZ", from: "2001:db8:1:2::\(i + 1)").status, 404) }
        XCTAssertEqual(redeem("ZZZZ-ZZZZ-ZZZZ", from: "2001:db8:1:2::ff").status, 429)
        XCTAssertEqual(redeem(code, from: "198.51.100.1").status, 201, "another address is served")
    }

    /// Failures from any number of addresses count against the live codes of their bucket
    /// (the first two characters): past `linkCodeFailuresPerCode` the code is void, and the
    /// right code is then refused like any other.
    func testPerCodeLimitHoldsAcrossAddressesOverHTTP() throws {
        _ = try server { $0.accountAccess.linkCodeFailuresPerCode = 20 }
        let (_, token) = s.signup(TestServer.handle("a"))
        let code = issue(token).code
        let other = issue(token).code
        let bucket = String(code.prefix(2))
        var tried = 0
        for i in 0..<300 {
            let guess = bucket + String(format: "%02d-%04d-%04d", i % 100, i, i)
            if guess == code { continue }
            XCTAssertEqual(redeem(guess, from: "10.1.\(i / 250).\(i % 250)").status, 404)
            tried += 1
        }
        XCTAssertGreaterThan(tried, 20)
        XCTAssertEqual(redeem(code, from: "203.0.113.9").code, "link_code_invalid", "void after \(tried) guesses in its bucket")
        if other.prefix(2) != code.prefix(2) {
            XCTAssertEqual(redeem(other, from: "203.0.113.10").status, 201, "a code of another bucket is untouched")
        }
    }

    /// 10,000 tries, driven through the storage rule in concurrent writes (on PostgreSQL from
    /// every connection of the pool at once): from one address exactly the allowed number
    /// of failures is ever looked at; from 10,000 addresses, none finds the code, which is
    /// void after its bucket's allowance.
    // Not optimised: Swift 6.3.1's optimiser crashes on this function in a release build
    // (Mem2Reg, an OSSA lifetime), which `bench/client.sh` makes of the tests.
    @_optimize(none)
    func testLimitsHoldOverTenThousandTries() throws {
        _ = try server()
        let (account, token) = s.signup(TestServer.handle("a"))
        _ = account
        let code = HumanCode(reading: issue(token).code, length: LinkCodeRecord.length)!
        let limits = CodeAttemptLimits(perAddress: AttemptLimit(scope: "link-address", limit: 10, windowMs: 60_000), perHandle: nil,
                                       perCode: 10)
        let bucket = code.prefix(LinkCodeRecord.bucketLength)
        let guesses = (0..<10_000).map { _ -> HumanCode in
            var g: HumanCode
            repeat { g = HumanCode(reading: bucket + HumanCode.generate(length: 10).canonical, length: 12)! } while g == code
            return g
        }
        let now = Timestamp.nowMs()
        let oneAddress = s.concurrentWrites(10_000) { i, w in
            try w.redeemLinkCode(guesses[i], address: "v4:192.0.2.1", deviceName: "x", limits: limits, now: now)
        }
        var refused = 0, limited = 0
        for r in oneAddress {
            switch try r.get() {
            case .refused: refused += 1
            case .limited: limited += 1
            case .redeemed, .pairedChild: XCTFail("a guess redeemed")
            }
        }
        XCTAssertEqual(refused, 10, "failures looked at from one address")
        XCTAssertEqual(limited, 9_990)

        let manyAddresses = s.concurrentWrites(10_000) { i, w in
            try w.redeemLinkCode(guesses[i], address: "v4:10.\(i >> 16).\(i >> 8 & 255).\(i & 255)", deviceName: "x",
                                 limits: limits, now: now)
        }
        for r in manyAddresses { XCTAssertEqual(try r.get(), .refused) }
        let right = try s.write { w in try w.redeemLinkCode(code, address: "v4:203.0.113.1", deviceName: "x", limits: limits, now: now) }
        XCTAssertEqual(right, .refused, "the code is void after 10 failures in its bucket")
    }

    // MARK: cost

    /// A refused code costs the server no more than an accepted one, and the kinds of
    /// refusal cannot be told apart by time: compared in the access log's request times of
    /// a server process (`durationMs`), interleaved so that load on the machine falls on
    /// every kind alike.
    func testRefusalsCostNoMoreThanAcceptedCodesInTheLog() throws {
        let binary = try ServerProcess.binary()
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-lc-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: data) }
        var arguments = ["--link-code-failures-per-minute", "0", "--link-code-failures-per-code", "0", "--registrations-per-hour", "0",
                         "--event-loops", "1"]
        var schema: String?
        if let url = TestServer.postgresURL {
            let fresh = try TestServer.freshSchema(url, prefix: "lc")
            arguments += ["--database-url", fresh.url, "--database-connections", "2"]
            schema = fresh.schema
        }
        defer { if let schema { TestServer.dropSchema(schema) } }
        let server = try ServerProcess(binary: binary, dataDir: data, arguments: arguments)
        defer { server.kill9() }
        let http = LoopbackHTTP(port: server.port)
        let signup = http.call("POST", "/v1/accounts", json: .obj(["handle": .string(TestServer.handle("t")), "displayName": "T"]))
        let token = signup.json["token"]!["secret"]!.stringValue!
        func issue() -> String { http.call("POST", "/v1/link-codes", token: token).json["code"]!.stringValue! }
        func redeem(_ code: String) -> Int { http.call("POST", "/v1/link-codes/redeem", json: .obj(["code": .string(code)])).status }

        let rounds = 40
        for _ in 0..<5 { _ = redeem(issue()) }   // warm-up, not measured
        usleep(300_000)   // the log is written every 100 ms
        let mark = (try? String(contentsOfFile: server.logPath, encoding: .utf8))?.count ?? 0
        for i in 0..<rounds {
            let right = issue(), used = issue()
            XCTAssertEqual(redeem(used), 201)
            XCTAssertEqual(redeem(right), 201)
            XCTAssertEqual(redeem(used), 404)
            XCTAssertEqual(redeem(String(format: "0000-%04d-0000", i)), 404)
        }
        usleep(300_000)   // the log is written every 100 ms
        let text = (try? String(contentsOfFile: server.logPath, encoding: .utf8)) ?? ""
        var accepted: [Double] = [], refused: [Double] = []
        for line in text.dropFirst(mark).split(separator: "\n") {
            guard let v = try? JSONValue.parse(String(line)), v["event"]?.stringValue == "request",
                  v["route"]?.stringValue == "/v1/link-codes/redeem", let ms = v["durationMs"]?.number else { continue }
            if v["status"]?.intValue == 201 { accepted.append(ms) } else if v["status"]?.intValue == 404 { refused.append(ms) }
        }
        XCTAssertEqual(accepted.count, 2 * rounds, server.logTail)
        XCTAssertEqual(refused.count, 2 * rounds)
        func median(_ a: [Double]) -> Double { let s = a.sorted(); return s[s.count / 2] }
        let a = median(accepted), r = median(refused)
        // No more than an accepted one, allowing a millisecond of scheduling noise.
        XCTAssertLessThanOrEqual(r, a * 1.25 + 1.0, "refused median \(r) ms, accepted median \(a) ms")
        // A used code and an unknown one (alternating in the log) take the same time.
        let used = refused.enumerated().filter { $0.offset % 2 == 0 }.map(\.element)
        let unknown = refused.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        let (u, n) = (median(used), median(unknown))
        print("link-code redemption medians: accepted \(a) ms, refused \(r) ms (used \(u) ms, unknown \(n) ms)")
        XCTAssertLessThanOrEqual(abs(u - n), max(1.0, 0.5 * max(u, n)), "used median \(u) ms, unknown median \(n) ms")
    }
}

extension JSONValue {
    var serializedString: String { String(decoding: serialized(), as: UTF8.self) }

    /// A JSON number as a Double.
    var number: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .number(let n): return Double(n)
        default: return nil
        }
    }
}
