import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
@testable import LedgerStorageSQLite
import XCTest

/// `POST /v1/households/{id}/owner` over HTTP (both backends).
final class OwnerTransferTests: XCTestCase {
    var s: TestServer!

    override func tearDown() { s?.stop() }

    func transfer(_ household: String, to account: String, token: String) -> TestServer.Reply {
        s.call("POST", "/v1/households/\(household)/owner", token: token, json: .obj(["accountId": .string(account)]))
    }

    func testTheOwnerHandsTheHouseholdToAReadWriteParticipant() throws {
        s = try TestServer()
        let (ownerId, owner) = s.signup(TestServer.handle("o"))
        let h = s.household(owner)
        let rw = s.member(of: h, owner: owner)
        let r = transfer(h, to: rw.id.uppercased(), token: owner)
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        XCTAssertEqual(r.json["ownerAccountId"]?.stringValue, rw.id)
        XCTAssertEqual(r.json["role"]?.stringValue, "participant")
        XCTAssertEqual(r.json["permission"]?.stringValue, "readWrite")
        XCTAssertEqual(r.header("ETag"), "\"\(r.json["changeTag"]!.stringValue!)\"")

        let asNewOwner = s.call("GET", "/v1/households/\(h)", token: rw.token).json
        XCTAssertEqual(asNewOwner["role"]?.stringValue, "owner")
        XCTAssertEqual(asNewOwner["ownerAccountId"]?.stringValue, rw.id)
        // The previous owner is an accepted read-write participant; the new one no participant.
        let participants = s.call("GET", "/v1/households/\(h)/share", token: rw.token).json["participants"]?.arrayValue ?? []
        let previous = participants.first { $0["accountId"]?.stringValue == ownerId }
        XCTAssertEqual(previous?["status"]?.stringValue, "accepted")
        XCTAssertEqual(previous?["permission"]?.stringValue, "readWrite")
        XCTAssertFalse(participants.contains { $0["accountId"]?.stringValue == rw.id })
        // The previous owner writes, but owner-only operations are the new owner's.
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children", token: owner, json: .obj(["name": "Bo"])).status, 201)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/share", token: owner).code, "owner_only")
        XCTAssertEqual(transfer(h, to: ownerId, token: owner).code, "owner_only")
        // And it can be handed back.
        let back = transfer(h, to: ownerId, token: rw.token)
        XCTAssertEqual(back.status, 200)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)", token: owner).json["role"]?.stringValue, "owner")
        let after = s.call("GET", "/v1/households/\(h)/share", token: owner).json["participants"]?.arrayValue ?? []
        XCTAssertFalse(after.contains { $0["accountId"]?.stringValue == ownerId }, "an owner holds no participant row")
        XCTAssertEqual(after.first { $0["accountId"]?.stringValue == rw.id }?["status"]?.stringValue, "accepted")
    }

    func testOnlyTheOwnerTransfers() throws {
        s = try TestServer()
        let (_, owner) = s.signup(TestServer.handle("o"))
        let h = s.household(owner)
        let rw = s.member(of: h, owner: owner)
        let other = s.member(of: h, owner: owner)
        let stranger = s.signup(TestServer.handle("s"))
        XCTAssertEqual(transfer(h, to: other.id, token: rw.token).code, "owner_only")
        XCTAssertEqual(transfer(h, to: stranger.id, token: stranger.token).status, 404)
        XCTAssertEqual(transfer(h, to: rw.id, token: "kl_" + String(repeating: "A", count: 43)).status, 401)
    }

    /// Only an accepted read-write participant can take a household: anyone else is 422
    /// `not_a_participant`, and nothing changes.
    func testTheTargetMustBeAnAcceptedReadWriteParticipant() throws {
        s = try TestServer()
        let (ownerId, owner) = s.signup(TestServer.handle("o"))
        let h = s.household(owner)
        let readOnly = s.member(of: h, owner: owner, permission: "readOnly")
        let invitee = s.member(of: h, owner: owner, accept: false)
        let departed = s.member(of: h, owner: owner)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/share/participants/\(departed.id)", token: departed.token).status, 204)
        let revoked = s.member(of: h, owner: owner)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/share/participants/\(revoked.id)", token: owner).status, 204)
        let stranger = s.signup(TestServer.handle("s"))
        for (who, id) in [("read-only", readOnly.id), ("invitee", invitee.id), ("departed", departed.id), ("revoked", revoked.id),
                          ("stranger", stranger.id), ("the owner", ownerId), ("no account", UUID().lowercased)] {
            let r = transfer(h, to: id, token: owner)
            XCTAssertEqual(r.status, 422, who)
            XCTAssertEqual(r.code, "not_a_participant", who)
        }
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)", token: owner).json["role"]?.stringValue, "owner")
        let bad = s.call("POST", "/v1/households/\(h)/owner", token: owner, json: .obj(["accountId": "not-a-uuid"]))
        XCTAssertEqual(bad.code, "validation_failed")
    }

    /// Every device learns the new owner from the change feed: a pull after its last token
    /// gets the household with the new owner and its own new access, and a parked long-poll
    /// wakes.
    func testTheFeedCarriesTheNewOwner() throws {
        s = try TestServer()
        let (ownerId, owner) = s.signup(TestServer.handle("o"))
        let h = s.household(owner)
        let rw = s.member(of: h, owner: owner)
        let third = s.member(of: h, owner: owner)
        var since: [String: String] = [:]
        for (name, token) in [("owner", owner), ("rw", rw.token), ("third", third.token)] {
            since[name] = s.call("GET", "/v1/households/\(h)/changes", token: token).json["nextToken"]!.stringValue!
        }
        let server = s!
        let token = since["third"]!
        let parked = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var woken: TestServer.Reply?
        Thread {
            woken = server.call("GET", "/v1/households/\(h)/changes?since=\(token)&wait=20", token: third.token)
            parked.signal()
        }.start()
        usleep(300_000)
        let started = Date()
        XCTAssertEqual(transfer(h, to: rw.id, token: owner).status, 200)
        XCTAssertEqual(parked.wait(timeout: .now() + 10), .success)
        XCTAssertLessThan(Date().timeIntervalSince(started), 5, "the long-poll woke")
        XCTAssertEqual(woken?.json["household"]?["ownerAccountId"]?.stringValue, rw.id)

        for (name, token, role, permission) in [("owner", owner, "participant", "readWrite"), ("rw", rw.token, "owner", "readWrite"),
                                                ("third", third.token, "participant", "readWrite")] {
            let page = s.call("GET", "/v1/households/\(h)/changes?since=\(since[name]!)", token: token)
            XCTAssertEqual(page.status, 200, name)
            XCTAssertNotEqual(page.json["nextToken"]?.stringValue, since[name], name)
            XCTAssertEqual(page.json["household"]?["ownerAccountId"]?.stringValue, rw.id, name)
            XCTAssertEqual(page.json["access"]?["role"]?.stringValue, role, name)
            XCTAssertEqual(page.json["access"]?["permission"]?.stringValue, permission, name)
        }
        _ = ownerId
    }

    /// The subscription and the entitlement stay with the household.
    func testTheSubscriptionStaysWithTheHousehold() throws {
        let f = try AppStoreFixture()
        s = try AppStoreFixture.server()
        let (ownerId, owner) = s.signup(TestServer.handle("o"))
        let h = s.household(owner)
        let rw = s.member(of: h, owner: owner)
        let now = Timestamp.nowMs()
        let jws = try f.sign(AppStoreFixture.transaction(owner: ownerId, original: "2000000\(Int.random(in: 100_000...999_999))",
                                                         signedDate: now - 1000, expires: now + 30 * AppStoreFixture.day))
        let put = s.call("PUT", "/v1/households/\(h)/subscription", token: owner, json: .obj(["signedTransaction": .string(jws)]))
        XCTAssertEqual(put.status, 200, String(decoding: put.body, as: UTF8.self))
        let before = s.call("GET", "/v1/households/\(h)/entitlement", token: rw.token).json
        XCTAssertEqual(before["pro"], .bool(true))

        XCTAssertEqual(transfer(h, to: rw.id, token: owner).status, 200)
        for token in [owner, rw.token] {
            let e = s.call("GET", "/v1/households/\(h)/entitlement", token: token).json
            XCTAssertEqual(e["pro"], .bool(true))
            XCTAssertEqual(e["grantedByAccountId"]?.stringValue, ownerId, "the purchase is still the previous owner's")
        }
        let sub = s.call("GET", "/v1/households/\(h)/subscription", token: rw.token)
        XCTAssertEqual(sub.status, 200, "the new owner manages the subscription")
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/subscription", token: owner).code, "owner_only")
    }
}
