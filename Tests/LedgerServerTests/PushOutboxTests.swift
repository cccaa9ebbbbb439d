import Foundation
import IDTokenKitTesting
import LedgerServerTesting
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import XCTest

/// The wake outbox at the storage seam (both backends), with times chosen by the test: one
/// row per device and household, coalesced while due or in flight, quiet after an answer,
/// never for the device that made the change. The server here has no gateway, so no sender
/// takes wakes behind the test's back (its storage is told to queue them all the same).
final class PushOutboxTests: XCTestCase {
    var s: TestServer!
    var storage: any LedgerStorage { s.app.services.storage }

    override func setUpWithError() throws {
        s = try TestServer()
        s.app.services.storage.pushWakes.set(true)
    }
    override func tearDown() { s?.stop() }

    func caller(_ token: String) -> Caller {
        let me = s.call("GET", "/v1/me", token: token).json
        return Caller(accountId: me["account"]!["id"]!.stringValue!, tokenId: me["token"]!["id"]!.stringValue!)
    }

    func register(_ c: Caller) throws {
        let key = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
        try storage.writeAndWait { w in
            try w.registerPush(token: c.tokenId, caller: c, appId: "com.example", pushKey: key, gateway: "https://gw.example/notify",
                               now: Timestamp.nowMs())
        }
    }

    func claim(at now: Int64) throws -> [PushWake] {
        try storage.writeAndWait { w in try w.pushWriting().claimPushWakes(now: now, lease: now + 60_000, limit: 10) }.wakes
    }

    func depth() throws -> Int { try storage.read { try $0.pushReading().pushOutboxDepth() } }

    func testWithoutAGatewayCommitsQueueNothing() throws {
        let mum = s.signup("mum").token
        let h = s.household(mum)
        let child = s.child(mum, household: h)
        let dad = s.joinedParticipant(h, owner: mum, handle: "dad")
        try register(caller(dad.token))
        s.app.services.storage.pushWakes.set(false)
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(child)/transactions", token: mum,
                              json: .obj(["amountCents": 1])).status, 201)
        XCTAssertEqual(try depth(), 0)
        s.app.services.storage.pushWakes.set(true)
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(child)/transactions", token: mum,
                              json: .obj(["amountCents": 1])).status, 201)
        XCTAssertEqual(try depth(), 1)
    }

    func testTheOutboxCoalescesPerDeviceAndKeepsTheQuietTime() throws {
        let mum = s.signup("mum").token
        let h = s.household(mum)
        let child = s.child(mum, household: h)
        let dad = s.joinedParticipant(h, owner: mum, handle: "dad")
        let mumCaller = caller(mum), dadCaller = caller(dad.token)
        try register(mumCaller)
        try register(dadCaller)
        func add() {
            XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(child)/transactions", token: mum,
                                  json: .obj(["amountCents": 1])).status, 201)
        }
        XCTAssertEqual(try depth(), 0)
        add()
        XCTAssertEqual(try depth(), 1, "Dad's device only, never the writer's")
        let now = Timestamp.nowMs() + 1_000
        let first = try claim(at: now)
        XCTAssertEqual(first.map(\.tokenId), [dadCaller.tokenId])
        XCTAssertEqual(first.first?.householdId, h)
        XCTAssertEqual(first.first?.attempts, 0)
        let sent = try XCTUnwrap(first.first?.seq)

        // In flight: further changes fold into it, nothing more is due.
        add()
        add()
        XCTAssertEqual(try depth(), 1)
        XCTAssertEqual(try claim(at: now), [])

        // Answered: the changes that came meanwhile are due when the quiet time ends.
        try storage.writeAndWait { w in
            try w.pushWriting().finishPushWake(token: dadCaller.tokenId, household: h, sentSeq: sent, quietUntil: now + 30_000)
        }
        XCTAssertEqual(try claim(at: now + 29_000), [])
        let second = try claim(at: now + 30_000)
        XCTAssertEqual(second.count, 1)
        XCTAssertGreaterThan(try XCTUnwrap(second.first?.seq), sent, "announces the later change position")

        // A failed attempt: due again later, one attempt more.
        try storage.writeAndWait { w in
            try w.pushWriting().postponePushWake(token: dadCaller.tokenId, household: h, to: now + 31_000)
        }
        XCTAssertEqual(try claim(at: now + 30_500), [])
        let retried = try claim(at: now + 31_000)
        XCTAssertEqual(retried.first?.attempts, 1)
        let last = try XCTUnwrap(retried.first?.seq)

        // Answered with nothing newer: due no more; the next change waits for the quiet time.
        try storage.writeAndWait { w in
            try w.pushWriting().finishPushWake(token: dadCaller.tokenId, household: h, sentSeq: last, quietUntil: Timestamp.nowMs() + 60_000)
        }
        XCTAssertEqual(try depth(), 0)
        add()
        XCTAssertEqual(try depth(), 1)
        XCTAssertEqual(try claim(at: Timestamp.nowMs() + 1_000), [], "quiet for the interval")
        XCTAssertEqual(try claim(at: Timestamp.nowMs() + 61_000).count, 1)

        // Dad's change wakes Mum's device.
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(child)/transactions", token: dad.token,
                              json: .obj(["amountCents": 1])).status, 201)
        XCTAssertEqual(try claim(at: Timestamp.nowMs() + 1_000).map(\.tokenId), [mumCaller.tokenId])
    }
}
