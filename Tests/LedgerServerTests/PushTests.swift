import Foundation
import IDTokenKitTesting
import LedgerServerTesting
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import XCTest

/// Push wakes (both backends), against a loopback stand-in for a Matrix push gateway:
/// registration reaches only the caller's own tokens and allowed gateways; a change wakes
/// every other device of the household, content-free, coalesced per device; 4xx is never
/// retried, 5xx is with a growing delay, `rejected` keys are unregistered; devices that
/// lost their token or their access are woken no more; a slow gateway never slows a write.
final class PushTests: XCTestCase {
    static let notifyPath = "/_matrix/push/v1/notify"
    static let appId = "com.example.kidmoney"

    var gateway: StandInHTTPServer!
    var s: TestServer!
    var notifyURL: String { gateway.base + Self.notifyPath }

    override func setUpWithError() throws {
        gateway = try StandInHTTPServer()
        gateway.answer(Self.notifyPath, json: #"{"rejected":[]}"#)
    }

    override func tearDown() {
        s?.stop()
        gateway?.stop()
    }

    /// A server sending to the stand-in, with intervals in milliseconds.
    func start(minInterval: Double = 0, configure: (inout LedgerAppConfiguration) -> Void = { _ in }) throws {
        let url = notifyURL
        s = try TestServer { c in
            c.pushGateways = [url]
            c.pushMinInterval = minInterval
            c.pushRetrySeconds = 0.05
            c.pushRetryMaxSeconds = 0.4
            c.pushPollSeconds = 0.05
            c.pushTimeout = 3
            configure(&c)
        }
    }

    static func key() -> String {
        (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    /// The caller's token id (`GET /v1/me`).
    func tokenId(_ token: String) -> String { s.call("GET", "/v1/me", token: token).json["token"]!["id"]!.stringValue! }

    @discardableResult
    func register(_ token: String, key: String, tokenId id: String? = nil, gateway: String? = nil) -> TestServer.Reply {
        var body: JSONObject = ["appId": .string(Self.appId), "pushKey": .string(key)]
        if let gateway { body["gateway"] = .string(gateway) }
        return s.call("PUT", "/v1/tokens/\(id ?? tokenId(token))/push", token: token, json: .object(body))
    }

    @discardableResult
    func add(_ token: String, _ household: String, _ child: String, cents: Int64 = 500, note: String = "") -> TestServer.Reply {
        let r = s.call("POST", "/v1/households/\(household)/children/\(child)/transactions", token: token,
                       json: .obj(["amountCents": .int(cents), "note": .string(note)]))
        XCTAssertEqual(r.status, 201, r.json.serializedString)
        return r
    }

    /// The notify bodies the gateway received, in order.
    var notifications: [JSONValue] {
        gateway.requests(Self.notifyPath).compactMap { try? JSONValue.parse(Array($0.body.utf8)) }
    }

    func wakes(for key: String) -> [JSONValue] {
        notifications.filter { $0["notification"]?["devices"]?.arrayValue?.first?["pushkey"]?.stringValue == key }
    }

    func eventually(_ what: String, seconds: Double = 10, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return }
            Thread.sleep(forTimeInterval: 0.01)
        }
        XCTFail("not within \(seconds) s: \(what)")
    }

    /// Wakes due or in flight.
    func outboxRows() throws -> Int64 { try s.int("SELECT count(*) FROM push_wakes WHERE due_at IS NOT NULL") }

    /// Mum (owner) with a household and a child, and Dad, an accepted participant.
    func family() -> (mum: String, dad: (id: String, token: String), household: String, child: String) {
        let mum = s.signup("mum").token
        let h = s.household(mum)
        let child = s.child(mum, household: h, name: "Ada")
        let dad = s.joinedParticipant(h, owner: mum, handle: "dad")
        return (mum, dad, h, child)
    }

    // MARK: registration

    func testRegistrationReachesOnlyTheCallersOwnLiveTokens() throws {
        try start()
        let mum = s.signup("mum").token
        let mumId = tokenId(mum)
        let second = s.call("POST", "/v1/tokens", token: mum, json: .obj(["deviceName": "iPad"]))
        let secondId = second.json["id"]!.stringValue!
        let dad = s.signup("dad").token

        XCTAssertEqual(register(mum, key: Self.key()).status, 204)
        XCTAssertEqual(register(mum, key: Self.key(), tokenId: secondId).status, 204, "another token of the same account")

        // Another account's token id is the same 404 as one that does not exist.
        let foreign = register(dad, key: Self.key(), tokenId: mumId)
        let unknown = register(dad, key: Self.key(), tokenId: UUID().lowercased)
        XCTAssertEqual(foreign.status, 404)
        XCTAssertEqual(foreign.code, unknown.code)
        XCTAssertEqual(foreign.json["detail"], unknown.json["detail"])
        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(mumId)/push", token: dad).status, 404)
        XCTAssertEqual(register(dad, key: Self.key(), tokenId: "not-a-uuid").status, 404)
        XCTAssertEqual(s.call("PUT", "/v1/tokens/\(mumId)/push", json: .obj(["appId": "a", "pushKey": .string(Self.key())])).status, 401)

        // Dad's attempts left Mum's registration as it was.
        let listed = s.call("GET", "/v1/tokens", token: mum)
        XCTAssertEqual(listed.status, 200)
        let items = listed.json["items"]!.arrayValue!
        for item in items {
            let push = try XCTUnwrap(item["push"]?.objectValue, "both of Mum's tokens are registered")
            XCTAssertEqual(Set(push.keys), ["appId", "gateway", "registeredAt"], "never the key")
            XCTAssertEqual(push["appId"], .string(Self.appId))
            XCTAssertEqual(push["gateway"], .string(notifyURL), "the default gateway")
            XCTAssertNotNil(Timestamp.parse(push["registeredAt"]?.stringValue ?? ""))
        }
        XCTAssertEqual(s.call("GET", "/v1/tokens", token: dad).json["items"]?.arrayValue?.first?["push"], .null)

        // Another account registering the same key takes nothing from Mum; Mum's other token
        // registering her phone's key takes it over (the app was installed again).
        let mumKey = Self.key()
        XCTAssertEqual(register(mum, key: mumKey).status, 204)
        XCTAssertEqual(register(dad, key: mumKey).status, 204)
        XCTAssertEqual(s.call("GET", "/v1/tokens", token: mum).json["items"]!.arrayValue!.filter { $0["push"] != .null }.count, 2)
        XCTAssertEqual(register(mum, key: mumKey, tokenId: secondId).status, 204)
        let holders = s.call("GET", "/v1/tokens", token: mum).json["items"]!.arrayValue!.filter { $0["push"] != .null }
        XCTAssertEqual(holders.compactMap { $0["id"]?.stringValue }, [secondId], "the key moved to the other token")

        // A revoked token cannot be registered again.
        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(secondId)", token: mum).status, 204)
        XCTAssertEqual(register(mum, key: Self.key(), tokenId: secondId).status, 404)
        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(secondId)/push", token: mum).status, 404)

        // Unregistering: 204, and again 204 (nothing to remove).
        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(mumId)/push", token: mum).status, 204)
        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(mumId)/push", token: mum).status, 204)
        XCTAssertEqual(s.call("GET", "/v1/tokens", token: mum).json["items"]?.arrayValue?.first?["push"], .null)
    }

    func testRegistrationValidatesItsFieldsAndRefusesGatewaysTheOperatorDidNotAllow() throws {
        try start()
        let mum = s.signup("mum").token
        let id = tokenId(mum)
        func put(_ body: JSONValue) -> TestServer.Reply { s.call("PUT", "/v1/tokens/\(id)/push", token: mum, json: body) }
        let key = Self.key()
        for (body, field) in [(JSONValue.obj(["pushKey": .string(key)]), "appId"),
                              (.obj(["appId": "", "pushKey": .string(key)]), "appId"),
                              (.obj(["appId": "com.example app", "pushKey": .string(key)]), "appId"),
                              (.obj(["appId": .string(String(repeating: "a", count: 201)), "pushKey": .string(key)]), "appId"),
                              (.obj(["appId": "com.example", "pushKey": "xyz"]), "pushKey"),
                              (.obj(["appId": "com.example", "pushKey": .string(String(key.dropLast()))]), "pushKey"),
                              (.obj(["appId": "com.example", "pushKey": .string(String(repeating: "ab", count: 257))]), "pushKey"),
                              (.obj(["appId": "com.example", "pushKey": .int(12)]), "pushKey"),
                              (.obj(["appId": "com.example", "pushKey": .string(key), "room": "x"]), "room")] {
            let r = put(body)
            XCTAssertEqual(r.status, 422, "\(body.serializedString)")
            XCTAssertEqual(r.code, "validation_failed")
            XCTAssertNotNil(r.json["fields"]?[field], "\(body.serializedString): \(r.json.serializedString)")
        }
        // Forged gateways: no server-side request to an address a client chose.
        for forged in ["http://169.254.169.254/latest/meta-data", "http://127.0.0.1:1/_matrix/push/v1/notify",
                       notifyURL + "?x=1", notifyURL.uppercased(), ""] {
            let r = put(.obj(["appId": "com.example", "pushKey": .string(key), "gateway": .string(forged)]))
            XCTAssertEqual(r.status, 422, forged)
            XCTAssertEqual(r.code, "gateway_not_allowed", forged)
            XCTAssertNotNil(r.json["fields"]?["gateway"])
        }
        XCTAssertEqual(s.call("GET", "/v1/tokens", token: mum).json["items"]?.arrayValue?.first?["push"], .null, "nothing was registered")
        XCTAssertEqual(put(.obj(["appId": "com.example", "pushKey": .string(key.uppercased()), "gateway": .string(notifyURL)])).status, 204)
    }

    func testPushRoutesAreNotFoundWithoutAGateway() throws {
        s = try TestServer()
        let mum = s.signup("mum").token
        let r = register(mum, key: Self.key())
        XCTAssertEqual(r.status, 404)
        XCTAssertEqual(r.code, "push_not_configured")
        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(tokenId(mum))/push", token: mum).code, "push_not_configured")
        XCTAssertEqual(s.call("GET", "/v1/tokens", token: mum).json["items"]?.arrayValue?.first?["push"], .null)
    }

    // MARK: wakes

    func testAChangeWakesEveryOtherDeviceOfTheHouseholdWithNothingPersonal() throws {
        try start()
        let f = family()
        let mumPhone = Self.key(), mumPad = Self.key(), dadPhone = Self.key(), strangerPhone = Self.key()
        register(f.mum, key: mumPhone)
        let pad = s.call("POST", "/v1/tokens", token: f.mum, json: .obj(["deviceName": "iPad"])).json["secret"]!.stringValue!
        register(pad, key: mumPad)
        XCTAssertEqual(register(f.dad.token, key: dadPhone).status, 204)
        let stranger = s.signup("stranger").token
        _ = s.household(stranger)
        register(stranger, key: strangerPhone)
        let registeredAt = Timestamp.parse(
            s.call("GET", "/v1/tokens", token: f.dad.token).json["items"]!.arrayValue!.first!["push"]!["registeredAt"]!.stringValue!)!

        add(f.mum, f.household, f.child, cents: 12_345, note: "Secret birthday present")
        try eventually("Mum's iPad and Dad's phone are woken") { !wakes(for: mumPad).isEmpty && !wakes(for: dadPhone).isEmpty }
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertTrue(wakes(for: mumPhone).isEmpty, "never the writer's own device")
        XCTAssertTrue(wakes(for: strangerPhone).isEmpty, "never a device of another household")
        XCTAssertEqual(wakes(for: dadPhone).count, 1)

        let request = try XCTUnwrap(gateway.requests(Self.notifyPath).first)
        XCTAssertEqual(request.method, "POST")
        XCTAssertEqual(request.headers["content-type"], "application/json")
        for body in notifications {
            XCTAssertEqual(Set(body.objectValue!.keys), ["notification"])
            let n = try XCTUnwrap(body["notification"]?.objectValue)
            XCTAssertEqual(Set(n.keys), ["event_id", "room_id", "prio", "counts", "devices"])
            XCTAssertEqual(n["room_id"], .string(f.household))
            XCTAssertEqual(n["prio"], "low")
            XCTAssertEqual(n["counts"], .obj(["unread": .int(0)]))
            let eventId = try XCTUnwrap(n["event_id"]?.stringValue)
            XCTAssertFalse(eventId.isEmpty)
            let devices = try XCTUnwrap(n["devices"]?.arrayValue)
            XCTAssertEqual(devices.count, 1)
            let d = try XCTUnwrap(devices[0].objectValue)
            XCTAssertEqual(Set(d.keys), ["app_id", "pushkey", "pushkey_ts", "data"])
            XCTAssertEqual(d["app_id"], .string(Self.appId))
            XCTAssertEqual(d["data"], .obj(["format": "event_id_only"]))
            XCTAssertNotNil(d["pushkey_ts"]?.intValue)
            // Every field's value is checked above; the rest of the body may name nothing
            // personal (the random key, the household id and the numbers are taken out first,
            // as hex or digits can spell "dad" or "12345" by chance).
            var text = body.serializedString
            for known in [d["pushkey"]?.stringValue, f.household, eventId, d["pushkey_ts"]?.intValue.map(String.init)] {
                if let known { text = text.replacingOccurrences(of: known, with: "") }
            }
            for personal in ["Ada", "Secret", "12345", "123.45", "mum", "dad", "Home", f.child, f.dad.id, f.mum] {
                XCTAssertFalse(text.contains(personal), "\(personal) in \(text)")
            }
        }
        let dadWake = try XCTUnwrap(wakes(for: dadPhone).first)
        XCTAssertEqual(dadWake["notification"]?["devices"]?.arrayValue?.first?["pushkey_ts"]?.intValue, registeredAt / 1000)

        // Dad's change wakes Mum's two devices, not his own phone.
        add(f.dad.token, f.household, f.child)
        try eventually("Mum's phone is woken by Dad's change") { !wakes(for: mumPhone).isEmpty }
        try eventually("the outbox empties") { try outboxRows() == 0 }
        XCTAssertEqual(wakes(for: dadPhone).count, 1)
        let metrics = String(decoding: s.call("GET", "/metrics").body, as: UTF8.self)
        XCTAssertTrue(metrics.contains("kidledger_push_outbox_depth 0"), metrics)
        XCTAssertTrue(metrics.contains("kidledger_push_gateway_duration_seconds_count"))
        XCTAssertFalse(metrics.contains("kidledger_push_wakes_sent_total 0\n"))
    }

    func testChangesWithinTheMinimumIntervalFoldIntoOneMoreWake() throws {
        try start(minInterval: 0.6)
        let f = family()
        let dadPhone = Self.key()
        register(f.dad.token, key: dadPhone)
        add(f.mum, f.household, f.child)
        try eventually("the first change wakes at once") { wakes(for: dadPhone).count == 1 }
        let first = gateway.requests(Self.notifyPath)[0].receivedAt
        for _ in 0..<5 { add(f.mum, f.household, f.child) }
        try eventually("the five changes fold into one more wake") { wakes(for: dadPhone).count == 2 }
        let second = gateway.requests(Self.notifyPath)[1].receivedAt
        XCTAssertGreaterThanOrEqual(second.timeIntervalSince(first), 0.5, "not before the interval")
        let ids = wakes(for: dadPhone).compactMap { $0["notification"]?["event_id"]?.stringValue }
        XCTAssertNotEqual(ids[0], ids[1], "the second wake names the later change position")
        Thread.sleep(forTimeInterval: 0.8)
        XCTAssertEqual(wakes(for: dadPhone).count, 2, "nothing more to say")
        XCTAssertEqual(try outboxRows(), 0)
    }

    func testARefusalIsNotRetried() throws {
        try start()
        gateway.answer(Self.notifyPath, status: 400, json: #"{"error":"bad"}"#)
        let f = family()
        register(f.dad.token, key: Self.key())
        add(f.mum, f.household, f.child)
        try eventually("the wake is tried") { notifications.count == 1 }
        try eventually("and dropped") { try outboxRows() == 0 }
        Thread.sleep(forTimeInterval: 0.4)
        XCTAssertEqual(notifications.count, 1, "a 4xx is never retried")
    }

    func testServerErrorsAreRetriedWithAGrowingDelayUntilTheGatewayTakesTheWake() throws {
        try start()
        gateway.answer(Self.notifyPath, status: 503, json: #"{"error":"busy"}"#)
        let f = family()
        let dadPhone = Self.key()
        register(f.dad.token, key: dadPhone)
        add(f.mum, f.household, f.child)
        try eventually("three attempts") { notifications.count >= 4 }
        let times = gateway.requests(Self.notifyPath).map(\.receivedAt)
        let gaps = zip(times.dropFirst(), times).map { $0.timeIntervalSince($1) }
        XCTAssertGreaterThanOrEqual(gaps[0], 0.04, "waits the base delay: \(gaps)")
        XCTAssertGreaterThan(gaps[2], gaps[0], "the delay grows: \(gaps)")
        XCTAssertEqual(try outboxRows(), 1, "one wake waits, however many attempts")
        // Parents keep writing while the gateway is down: still one wake for the device.
        for _ in 0..<20 { add(f.mum, f.household, f.child) }
        XCTAssertEqual(try outboxRows(), 1, "one wake waits, however many changes")
        XCTAssertEqual(try s.int("SELECT count(*) FROM push_wakes"), 1)
        gateway.answer(Self.notifyPath, json: "{}")
        try eventually("taken once the gateway is back") { try outboxRows() == 0 }
        let n = notifications.count
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(notifications.count, n, "no attempt after it was taken")
        XCTAssertTrue(notifications.allSatisfy { $0["notification"]?["devices"]?.arrayValue?.first?["pushkey"]?.stringValue == dadPhone })
    }

    func testARejectedPushKeyIsUnregistered() throws {
        try start()
        let f = family()
        let dadPhone = Self.key(), dadPad = Self.key()
        register(f.dad.token, key: dadPhone)
        let pad = s.call("POST", "/v1/tokens", token: f.dad.token, json: .obj(["deviceName": "iPad"])).json["secret"]!.stringValue!
        register(pad, key: dadPad)
        gateway.answer(Self.notifyPath, json: #"{"rejected":["\#(dadPhone)"]}"#)
        add(f.mum, f.household, f.child)
        try eventually("both woken") { !wakes(for: dadPhone).isEmpty && !wakes(for: dadPad).isEmpty }
        try eventually("the rejected key is unregistered") {
            let items = s.call("GET", "/v1/tokens", token: f.dad.token).json["items"]!.arrayValue!
            return items.filter { $0["push"] == .null }.count == 1
        }
        gateway.answer(Self.notifyPath, json: "{}")
        add(f.mum, f.household, f.child)
        try eventually("the other device is woken again") { wakes(for: dadPad).count == 2 }
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(wakes(for: dadPhone).count, 1, "the rejected key is woken no more")
        let metrics = String(decoding: s.call("GET", "/metrics").body, as: UTF8.self)
        XCTAssertTrue(metrics.contains("kidledger_push_wakes_rejected_total 1"), metrics)
    }

    func testRevokedTokensAndDepartedMembersAreWokenNoMore() throws {
        try start()
        let f = family()
        let dadPhone = Self.key(), dadPad = Self.key()
        register(f.dad.token, key: dadPhone)
        let pad = s.call("POST", "/v1/tokens", token: f.dad.token, json: .obj(["deviceName": "iPad"]))
        let padSecret = pad.json["secret"]!.stringValue!, padId = pad.json["id"]!.stringValue!
        register(padSecret, key: dadPad)
        add(f.mum, f.household, f.child)
        try eventually("both of Dad's devices are woken") { wakes(for: dadPhone).count == 1 && wakes(for: dadPad).count == 1 }

        // Revoked (signed out): its registration goes with it.
        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(padId)", token: f.dad.token).status, 204)
        add(f.mum, f.household, f.child)
        try eventually("the phone is woken") { wakes(for: dadPhone).count == 2 }
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(wakes(for: dadPad).count, 1, "a revoked token is not woken")

        // Dad leaves: his devices hear nothing of the household any more.
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(f.household)/share/participants/\(f.dad.id)", token: f.dad.token).status, 204)
        add(f.mum, f.household, f.child)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(wakes(for: dadPhone).count, 2, "a departed member is not woken")
        XCTAssertEqual(try outboxRows(), 0)
    }

    func testAWakeQueuedBeforeAccessWasLostIsDroppedUnsent() throws {
        try start()
        gateway.answer(Self.notifyPath, status: 503, json: "{}")
        let f = family()
        let dadPhone = Self.key()
        register(f.dad.token, key: dadPhone)
        add(f.mum, f.household, f.child)
        try eventually("the wake waits for the gateway") { notifications.count >= 1 }
        // The owner revokes Dad; the gateway comes back.
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(f.household)/share/participants/\(f.dad.id)", token: f.mum).status, 204)
        let n = notifications.count
        gateway.answer(Self.notifyPath, json: "{}")
        try eventually("the wake is dropped") { try outboxRows() == 0 }
        XCTAssertLessThanOrEqual(notifications.count, n + 1, "at most the attempt already under way")
    }

    func testDeletingAnAccountDropsItsRegistrations() throws {
        try start()
        let f = family()
        register(f.dad.token, key: Self.key())
        XCTAssertEqual(try s.int("SELECT count(*) FROM push_registrations"), 1)
        XCTAssertEqual(s.call("DELETE", "/v1/me", token: f.dad.token, json: .obj(["confirmHandle": "dad"])).status, 204)
        XCTAssertEqual(try s.int("SELECT count(*) FROM push_registrations"), 0)
    }

    func testASlowGatewayNeverSlowsAWrite() throws {
        try start()
        gateway.delay(Self.notifyPath, seconds: 1.5)
        let f = family()
        register(f.dad.token, key: Self.key())
        for i in 0..<5 {
            let started = Date()
            add(f.mum, f.household, f.child, cents: Int64(i + 1))
            XCTAssertLessThan(Date().timeIntervalSince(started), 1.0, "write \(i) waited for the gateway")
        }
        try eventually("the gateway got the wake") { !notifications.isEmpty }
    }
}
