import Foundation
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// Quotas: registrations per client address, households per account, children per
/// household, pending invitations per invitee, per inviter and per inviter for one invitee
/// (`BlockTests`), live tokens per account. Each refusal has its own code; a cap is lifted
/// again when what it counts goes down.
final class LimitsTests: XCTestCase {
    var servers: [TestServer] = []
    override func tearDown() { servers.forEach { $0.stop() } }

    func server(_ configure: @escaping (inout LedgerAppConfiguration) -> Void) throws -> TestServer {
        let s = try TestServer(configure: configure)
        servers.append(s)
        return s
    }

    func signup(_ s: TestServer, _ handle: String, from address: String? = nil) -> TestServer.Reply {
        s.call("POST", "/v1/accounts", json: .obj(["handle": .string(handle), "displayName": .string(handle)]),
               headers: address.map { ["X-Forwarded-For": $0] } ?? [:])
    }

    // MARK: registrations

    func testRegistrationsAreRateLimitedPerClientAddress() throws {
        let s = try server { $0.registrationsPerHour = 3; $0.trustedProxies = ["127.0.0.1"] }
        for i in 0..<3 { XCTAssertEqual(signup(s, "user\(i)", from: "203.0.113.5").status, 201) }
        let refused = signup(s, "user3", from: "203.0.113.5")
        XCTAssertEqual(refused.status, 429)
        XCTAssertEqual(refused.code, "registration_rate_limited")
        let retry = try XCTUnwrap(refused.header("Retry-After").flatMap { Int($0) })
        XCTAssertTrue((1...1200).contains(retry), "one registration comes back every 20 minutes: \(retry)")
        XCTAssertEqual(refused.header("Content-Type"), "application/problem+json")
        // The refused request created nothing.
        XCTAssertEqual(signup(s, "user3", from: "203.0.113.6").status, 201)
        // Another address has its own allowance; one IPv6 /64 is one client.
        XCTAssertEqual(signup(s, "bob0", from: "198.51.100.7").status, 201)
        for (i, address) in ["2001:db8::1", "2001:db8::2", "2001:db8::ffff:1"].enumerated() {
            XCTAssertEqual(signup(s, "v6\(i)", from: address).status, 201)
        }
        XCTAssertEqual(signup(s, "v6x", from: "2001:db8::abcd").status, 429)
        XCTAssertEqual(signup(s, "v6y", from: "2001:db8:0:1::1").status, 201)
        // Signing in devices of existing accounts is not registration.
        let (_, token) = s.signup("someone")  // from 127.0.0.1 itself
        XCTAssertEqual(s.call("POST", "/v1/tokens", token: token, json: .obj(["deviceName": "Phone"])).status, 201)
    }

    func testRegistrationBucketRefillsOverTheHour() {
        let clock = Clock()
        let limiter = RegistrationLimiter(perHour: 2, now: { clock.now })
        XCTAssertNil(limiter.take("192.0.2.1"))
        XCTAssertNil(limiter.take("192.0.2.1"))
        XCTAssertEqual(limiter.take("192.0.2.1"), 1800)
        clock.now += 1799
        XCTAssertEqual(limiter.take("192.0.2.1"), 1)
        clock.now += 1
        XCTAssertNil(limiter.take("192.0.2.1"))
        XCTAssertNotNil(limiter.take("192.0.2.1"))
        clock.now += 10 * 3600
        // Full again, never above the hourly allowance.
        XCTAssertNil(limiter.take("192.0.2.1"))
        XCTAssertNil(limiter.take("192.0.2.1"))
        XCTAssertNotNil(limiter.take("192.0.2.1"))
        XCTAssertNil(RegistrationLimiter(perHour: 0).take("192.0.2.1"), "0: no limit")
    }

    /// A flood from more networks than the limiter remembers costs one scan per that many
    /// new clients, and the memory stays bounded.
    func testRegistrationBucketsStayBounded() {
        let limiter = RegistrationLimiter(perHour: 1, now: { 0 })
        XCTAssertNil(limiter.take("2001:db8:0:1::1"))
        XCTAssertNotNil(limiter.take("2001:db8:0:1::2"), "one /64 is one client")
        for i in 1...RegistrationLimiter.maxBuckets { XCTAssertNil(limiter.take("2001:db8:\(String(i, radix: 16)):2::1")) }
        XCTAssertLessThan(limiter.bucketCount, RegistrationLimiter.maxBuckets / 2)
        XCTAssertNil(limiter.take("192.0.2.9"))
        XCTAssertNotNil(limiter.take("192.0.2.9"))
    }

    final class Clock: @unchecked Sendable { var now: Double = 1000 }

    // MARK: per-address limits

    /// Eight addresses of one IPv6 /64 are one client for each per-address limit, as they
    /// are for registrations; an IPv4-mapped address is its IPv4 address.
    func testEveryPerAddressLimitGroupsIPv6By64() throws {
        let s = try server { c in
            c.trustedProxies = ["127.0.0.1"]
            c.authFailuresPerMinute = 8
            c.notificationsPerMinute = 8
            c.bundleId = "com.example.kidledger"
            c.environments = ["Sandbox"]
        }
        let network = (1...8).map { "2001:db8:7:1::\(String($0 * 0x111, radix: 16))" }
        let bad = "kl_" + String(repeating: "B", count: 43)
        func authenticate(from address: String) -> TestServer.Reply {
            s.call("GET", "/v1/me", token: bad, headers: ["X-Forwarded-For": address])
        }
        for address in network { XCTAssertEqual(authenticate(from: address).status, 401, address) }
        let refused = authenticate(from: "2001:db8:7:1:ffff:ffff:ffff:ffff")
        XCTAssertEqual(refused.status, 429)
        XCTAssertEqual(refused.code, "rate_limited")
        XCTAssertEqual(authenticate(from: "2001:db8:7:2::1").status, 401, "the next /64 is another client")

        func notify(from address: String) -> TestServer.Reply {
            s.call("POST", "/v1/app-store/notifications", json: .obj(["signedPayload": "a.b.c"]), headers: ["X-Forwarded-For": address])
        }
        for address in network { XCTAssertEqual(notify(from: address).code, "malformed", address) }
        let limited = notify(from: "[2001:db8:7:1::abcd]:443")
        XCTAssertEqual(limited.status, 429)
        XCTAssertNotNil(limited.header("Retry-After"))
        XCTAssertEqual(notify(from: "2001:db8:7:2::1").status, 422)

        for i in 0..<4 { XCTAssertEqual(authenticate(from: i % 2 == 0 ? "198.51.100.4" : "::ffff:198.51.100.4").status, 401) }
        for i in 0..<4 { XCTAssertEqual(authenticate(from: i % 2 == 0 ? "[::ffff:198.51.100.4]:80" : "198.51.100.4:80").status, 401) }
        XCTAssertEqual(authenticate(from: "198.51.100.4").status, 429)
        XCTAssertEqual(authenticate(from: "198.51.100.5").status, 401)
    }

    /// A forwarded value with a port, or one that is not an address at all, cannot pick a
    /// fresh limit key: the port is dropped, and anything else counts as the proxy.
    func testForwardedValuesCannotDodgeTheLimits() throws {
        let s = try server { c in
            c.trustedProxies = ["127.0.0.1"]
            c.authFailuresPerMinute = 3
            c.registrationsPerHour = 2
        }
        let bad = "kl_" + String(repeating: "B", count: 43)
        func authenticate(from value: String) -> TestServer.Reply {
            s.call("GET", "/v1/me", token: bad, headers: ["X-Forwarded-For": value])
        }
        for port in 1000..<1003 { XCTAssertEqual(authenticate(from: "203.0.113.9:\(port)").status, 401) }
        XCTAssertEqual(authenticate(from: "203.0.113.9:2000").status, 429)
        XCTAssertEqual(authenticate(from: "203.0.113.9").status, 429)

        let junk = ["garbage", "1.2.3.4.5:80", String(repeating: "a", count: 4000)]
        for value in junk { XCTAssertEqual(authenticate(from: value).status, 401, String(value.prefix(20))) }
        for value in junk + ["10.1.1.1:99999", "203.0.113.10, junk"] {
            XCTAssertEqual(authenticate(from: value).status, 429, "all of them are the proxy: \(value.prefix(20))")
        }
        XCTAssertEqual(authenticate(from: "203.0.113.10").status, 401)

        XCTAssertEqual(signup(s, "user1", from: "garbage-1").status, 201)
        XCTAssertEqual(signup(s, "user2", from: "garbage-2").status, 201)
        XCTAssertEqual(signup(s, "user3", from: "garbage-3").code, "registration_rate_limited")
        XCTAssertEqual(signup(s, "user4", from: "[2001:db8::1]:1").status, 201)
        XCTAssertEqual(signup(s, "user5", from: "[2001:db8::2]:2").status, 201)
        XCTAssertEqual(signup(s, "user6", from: "[2001:db8::3]:3").code, "registration_rate_limited")
    }

    // MARK: households

    func testHouseholdsPerAccount() throws {
        let s = try server { $0.maxHouseholdsPerAccount = 2 }
        let (_, mum) = s.signup("mum")
        let first = s.household(mum)
        let putId = UUID().lowercased
        XCTAssertEqual(s.call("PUT", "/v1/households/\(putId)", token: mum, json: .obj(["name": "Two"])).status, 201)
        for r in [s.call("POST", "/v1/households", token: mum, json: .obj(["name": "Three"])),
                  s.call("PUT", "/v1/households/\(UUID().lowercased)", token: mum, json: .obj(["name": "Three"]))] {
            XCTAssertEqual(r.status, 409)
            XCTAssertEqual(r.code, "too_many_households")
            XCTAssertEqual(r.json["limit"]?.intValue, 2)
        }
        // Idempotent PUT of a household already owned still answers 200.
        XCTAssertEqual(s.call("PUT", "/v1/households/\(putId)", token: mum, json: .obj(["name": "Two"])).status, 200)
        XCTAssertEqual(s.call("GET", "/v1/households", token: mum).json["items"]?.arrayValue?.count, 2)
        // Another account has its own cap; deleting one makes room.
        let (_, dad) = s.signup("dad")
        XCTAssertEqual(s.call("POST", "/v1/households", token: dad, json: .obj(["name": "Dad's"])).status, 201)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(first)", token: mum).status, 204)
        XCTAssertEqual(s.call("POST", "/v1/households", token: mum, json: .obj(["name": "Again"])).status, 201)
    }

    // MARK: children

    func testChildrenPerHouseholdOverHTTPAndSync() throws {
        let s = try server { $0.maxChildrenPerHousehold = 2 }
        let (mumId, mum) = s.signup("mum")
        let h = s.household(mum)
        let ada = s.child(mum, household: h, name: "Ada")
        let bo = s.child(mum, household: h, name: "Bo")
        XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)/children/\(bo)", token: mum, json: .obj(["archived": true])).status, 200)
        let refused = s.call("POST", "/v1/households/\(h)/children", token: mum, json: .obj(["name": "Cy"]))
        XCTAssertEqual(refused.status, 409, "archived children count: they are never deleted")
        XCTAssertEqual(refused.code, "too_many_children")
        XCTAssertEqual(refused.json["limit"]?.intValue, 2)
        // Replaying a create of an existing child is still 200.
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children", token: mum,
                              json: .obj(["id": .string(ada), "name": "Ada"])).status, 200)

        let now = Timestamp.format(ms: Timestamp.nowMs())
        func record(_ id: String, _ name: String, base: String? = nil) -> JSONValue {
            var o: JSONObject = ["id": .string(id), "name": .string(name), "sortOrder": 5, "archived": false,
                                 "createdAt": .string(now), "modifiedAt": .string(now), "modifiedBy": .string(mumId)]
            if let base { o["baseChangeTag"] = .string(base) }
            return .object(o)
        }
        let tag = try XCTUnwrap(s.call("GET", "/v1/households/\(h)/children/\(ada)", token: mum).json["changeTag"]?.stringValue)
        let newId = UUID().lowercased
        let push = s.call("POST", "/v1/households/\(h)/changes", token: mum, json: .obj([
            "children": .array([record(newId, "Cy"), record(ada, "Ada Lovelace", base: tag)]),
        ]))
        XCTAssertEqual(push.status, 200)
        let results = push.json["results"]?.arrayValue ?? []
        XCTAssertEqual(results.first?["status"]?.stringValue, "rejected")
        XCTAssertEqual(results.first?["code"]?.stringValue, "too_many_children")
        XCTAssertEqual(results.last?["status"]?.stringValue, "saved", "edits of existing children go on")
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(newId)", token: mum).status, 404)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children?includeArchived=true", token: mum).json["items"]?.arrayValue?.count, 2)
    }

    /// One push cannot go past the cap either: its new children are counted as they land.
    func testOnePushStopsAtTheCap() throws {
        let s = try server { $0.maxChildrenPerHousehold = 3 }
        let (mumId, mum) = s.signup("mum")
        let h = s.household(mum)
        let now = Timestamp.format(ms: Timestamp.nowMs())
        let records: [JSONValue] = (0..<5).map { i in
            .obj(["id": .string(UUID().lowercased), "name": .string("Kid \(i)"), "sortOrder": .int(Int64(i)), "archived": false,
                  "createdAt": .string(now), "modifiedAt": .string(now), "modifiedBy": .string(mumId)])
        }
        let results = s.call("POST", "/v1/households/\(h)/changes", token: mum, json: .obj(["children": .array(records)]))
            .json["results"]?.arrayValue ?? []
        XCTAssertEqual(results.map { $0["status"]?.stringValue ?? "" }, ["saved", "saved", "saved", "rejected", "rejected"])
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children", token: mum).json["items"]?.arrayValue?.count, 3)
    }

    // MARK: invitations

    func share(_ s: TestServer, _ owner: String, name: String = "Home") -> String {
        let h = s.household(owner, name: name)
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/share", token: owner).status, 201)
        return h
    }

    func invite(_ s: TestServer, _ owner: String, _ h: String, _ handle: String) -> TestServer.Reply {
        s.call("POST", "/v1/households/\(h)/share/participants", token: owner,
               json: .obj(["handle": .string(handle), "permission": "readWrite"]))
    }

    func testPendingInvitationsPerInvitee() throws {
        let s = try server { $0.maxPendingInvitationsPerInvitee = 2 }
        let (_, dad) = s.signup("dad")
        var owners: [(String, String)] = []
        for i in 0..<3 {
            let (_, t) = s.signup("owner\(i)")
            owners.append((t, share(s, t)))
        }
        XCTAssertEqual(invite(s, owners[0].0, owners[0].1, "dad").status, 201)
        XCTAssertEqual(invite(s, owners[1].0, owners[1].1, "dad").status, 201)
        let refused = invite(s, owners[2].0, owners[2].1, "dad")
        XCTAssertEqual(refused.status, 409)
        XCTAssertEqual(refused.code, "too_many_invitations")
        XCTAssertEqual(refused.json["scope"]?.stringValue, "invitee")
        XCTAssertEqual(refused.json["limit"]?.intValue, 2)
        XCTAssertEqual(s.call("GET", "/v1/invitations", token: dad).json["items"]?.arrayValue?.count, 2)
        // Inviting again someone already invited changes nothing and stays 200.
        XCTAssertEqual(invite(s, owners[0].0, owners[0].1, "dad").status, 200)
        // Declining one makes room.
        let pending = s.call("GET", "/v1/invitations", token: dad).json["items"]!.arrayValue!
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(pending[0]["id"]!.stringValue!)/decline", token: dad).status, 204)
        XCTAssertEqual(invite(s, owners[2].0, owners[2].1, "dad").status, 201)
    }

    func testPendingInvitationsPerInviter() throws {
        let s = try server { $0.maxPendingInvitationsPerInviter = 2 }
        let (_, mum) = s.signup("mum")
        let h1 = share(s, mum), h2 = share(s, mum, name: "Cabin")
        for handle in ["dad", "gran", "aunt"] { _ = s.signup(handle) }
        XCTAssertEqual(invite(s, mum, h1, "dad").status, 201)
        XCTAssertEqual(invite(s, mum, h2, "gran").status, 201)
        let refused = invite(s, mum, h1, "aunt")
        XCTAssertEqual(refused.status, 409)
        XCTAssertEqual(refused.code, "too_many_invitations")
        XCTAssertEqual(refused.json["scope"]?.stringValue, "inviter")
        // Another owner is not affected; withdrawing (revoking) an invitation makes room.
        let (_, other) = s.signup("other")
        XCTAssertEqual(invite(s, other, share(s, other), "aunt").status, 201)
        let dadId = try XCTUnwrap(s.call("GET", "/v1/households/\(h1)/share", token: mum).json["participants"]?.arrayValue?.first?["accountId"]?.stringValue)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h1)/share/participants/\(dadId)", token: mum).status, 204)
        XCTAssertEqual(invite(s, mum, h1, "aunt").status, 201)
    }

    // MARK: tokens

    /// Live tokens per account: exactly the cap is allowed, one more is 409
    /// `too_many_tokens`; revoking one frees its slot; revoked tokens do not count, and
    /// other accounts have their own cap.
    func testTokensPerAccount() throws {
        let s = try server { $0.maxTokensPerAccount = 3 }
        let (_, mum) = s.signup("mum")   // the first token
        var made: [String] = []
        for i in 0..<2 {
            let r = s.call("POST", "/v1/tokens", token: mum, json: .obj(["deviceName": .string("Device \(i)")]))
            XCTAssertEqual(r.status, 201, "token \(i + 2) of 3")
            made.append(try XCTUnwrap(r.json["id"]?.stringValue))
        }
        XCTAssertEqual(s.call("GET", "/v1/tokens", token: mum).json["items"]?.arrayValue?.count, 3)
        let refused = s.call("POST", "/v1/tokens", token: mum, json: .obj(["deviceName": "One too many"]))
        XCTAssertEqual(refused.status, 409)
        XCTAssertEqual(refused.code, "too_many_tokens")
        XCTAssertEqual(refused.json["limit"]?.intValue, 3)
        XCTAssertEqual(refused.header("Content-Type"), "application/problem+json")
        XCTAssertEqual(s.call("GET", "/v1/tokens", token: mum).json["items"]?.arrayValue?.count, 3, "the refusal made nothing")

        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(made[0])", token: mum).status, 204)
        XCTAssertEqual(s.call("POST", "/v1/tokens", token: mum, json: .obj(["deviceName": "Replacement"])).status, 201)
        XCTAssertEqual(s.call("POST", "/v1/tokens", token: mum, json: .obj(["deviceName": "Again too many"])).code, "too_many_tokens")
        let (_, dad) = s.signup("dad")
        XCTAssertEqual(s.call("POST", "/v1/tokens", token: dad, json: .obj(["deviceName": "Phone"])).status, 201, "a cap per account")
    }

    /// The new limits are flags and environment variables of `kidledger-server serve`.
    func testInvitationAndTokenFlagsAndEnvironment() throws {
        let binary = try ServerProcess.binary()
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-limits-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let server = try ServerProcess(
            binary: binary, dataDir: dataDir,
            arguments: ["--tokens-per-account", "2", "--registrations-per-hour", "0"],
            environment: ["KIDLEDGER_TOKENS_PER_ACCOUNT": "50", "KIDLEDGER_FAILED_HANDLE_LOOKUPS_PER_MINUTE": "1",
                          "KIDLEDGER_MAX_PENDING_INVITATIONS_PER_INVITER_FOR_INVITEE": "1"])
        defer { server.kill9() }
        let client = HTTPTestClient(port: server.port)
        func signup(_ handle: String) -> String {
            client.call("POST", "/v1/accounts", json: .obj(["handle": .string(handle), "displayName": .string(handle)]))
                .json["token"]?["secret"]?.stringValue ?? ""
        }
        let mum = signup("mum")
        _ = signup("dad")
        XCTAssertEqual(client.call("POST", "/v1/tokens", token: mum, json: .obj(["deviceName": "Tablet"])).status, 201)
        XCTAssertEqual(client.call("POST", "/v1/tokens", token: mum, json: .obj(["deviceName": "Laptop"])).code, "too_many_tokens",
                       "the flag wins over the variable")
        func shared(_ name: String) -> String {
            let h = client.call("POST", "/v1/households", token: mum, json: .obj(["name": .string(name)])).json["id"]?.stringValue ?? ""
            XCTAssertEqual(client.call("POST", "/v1/households/\(h)/share", token: mum).status, 201)
            return h
        }
        let h1 = shared("One"), h2 = shared("Two")
        func invite(_ h: String, _ handle: String) -> TestServer.Reply {
            client.call("POST", "/v1/households/\(h)/share/participants", token: mum,
                        json: .obj(["handle": .string(handle), "permission": "readWrite"]))
        }
        XCTAssertEqual(invite(h1, "dad").status, 201)
        let second = invite(h2, "dad")
        XCTAssertEqual(second.code, "too_many_invitations")
        XCTAssertEqual(second.json["scope"]?.stringValue, "inviterForInvitee")
        XCTAssertEqual(invite(h2, "nobody").code, "unknown_handle")
        XCTAssertEqual(invite(h2, "nobody").status, 429)
    }

    // MARK: configuration

    /// Every limit is a flag and an environment variable of `kidledger-server serve`.
    func testFlagsAndEnvironment() throws {
        let binary = try ServerProcess.binary()
        let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-limits-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dataDir) }
        let server = try ServerProcess(
            binary: binary, dataDir: dataDir,
            arguments: ["--registrations-per-hour", "2", "--max-households-per-account", "1"],
            environment: ["KIDLEDGER_MAX_CHILDREN_PER_HOUSEHOLD": "1", "KIDLEDGER_MAX_PENDING_INVITATIONS_PER_INVITEE": "0",
                          "KIDLEDGER_REGISTRATIONS_PER_HOUR": "50"])
        defer { server.kill9() }
        let client = HTTPTestClient(port: server.port)
        func signup(_ handle: String) -> TestServer.Reply {
            client.call("POST", "/v1/accounts", json: .obj(["handle": .string(handle), "displayName": .string(handle)]))
        }
        let mum = signup("mum").json["token"]?["secret"]?.stringValue ?? ""
        XCTAssertEqual(signup("dad").status, 201)
        XCTAssertEqual(signup("gran").code, "registration_rate_limited", "the flag wins over the variable")
        let h = client.call("POST", "/v1/households", token: mum, json: .obj(["name": "Home"])).json["id"]?.stringValue ?? ""
        XCTAssertEqual(client.call("POST", "/v1/households", token: mum, json: .obj(["name": "Two"])).code, "too_many_households")
        XCTAssertEqual(client.call("POST", "/v1/households/\(h)/children", token: mum, json: .obj(["name": "Ada"])).status, 201)
        XCTAssertEqual(client.call("POST", "/v1/households/\(h)/children", token: mum, json: .obj(["name": "Bo"])).code, "too_many_children")
    }

    /// `--child-requests-per-hour` (and its variable) bounds what one child's device may ask an hour; `0` lifts it.
    func testChildRequestsPerHourFlagAndEnvironment() throws {
        let binary = try ServerProcess.binary()
        for (arguments, environment, allowed) in [(["--child-requests-per-hour", "2"], ["KIDLEDGER_CHILD_REQUESTS_PER_HOUR": "50"], 2),
                                                  ([], ["KIDLEDGER_CHILD_REQUESTS_PER_HOUR": "1"], 1),
                                                  (["--child-requests-per-hour", "0"], [:], 40)] {
            let dataDir = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-limits-\(UUID().uuidString)").path
            defer { try? FileManager.default.removeItem(atPath: dataDir) }
            let server = try ServerProcess(binary: binary, dataDir: dataDir,
                                           arguments: arguments + ["--registrations-per-hour", "0"], environment: environment)
            defer { server.kill9() }
            let client = HTTPTestClient(port: server.port)
            let mum = client.call("POST", "/v1/accounts", json: .obj(["handle": "mum", "displayName": "Mum"]))
                .json["token"]?["secret"]?.stringValue ?? ""
            let h = client.call("POST", "/v1/households", token: mum, json: .obj(["name": "Home"])).json["id"]?.stringValue ?? ""
            let c = client.call("POST", "/v1/households/\(h)/children", token: mum, json: .obj(["name": "Ada"])).json["id"]?.stringValue ?? ""
            let code = client.call("POST", "/v1/households/\(h)/children/\(c)/devices", token: mum, json: .obj([:])).json["code"] ?? .null
            let device = client.call("POST", "/v1/link-codes/redeem", json: .obj(["code": code])).json["token"]?["secret"]?.stringValue ?? ""
            let ask = JSONValue.obj(["kind": "spend", "amountCents": 1])
            for n in 0..<allowed {
                XCTAssertEqual(client.call("POST", "/v1/households/\(h)/children/\(c)/requests", token: device, json: ask).status, 201,
                               "\(arguments) \(environment): request \(n + 1)")
            }
            let next = client.call("POST", "/v1/households/\(h)/children/\(c)/requests", token: device, json: ask)
            if allowed == 40 {
                XCTAssertEqual(next.status, 201, "0: no limit")
            } else {
                XCTAssertEqual(next.status, 429, "\(arguments) \(environment)")
                XCTAssertEqual(next.code, "rate_limited")
            }
        }
    }
}
