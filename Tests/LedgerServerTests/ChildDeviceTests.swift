import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// Children's devices: pairing with a child link code, the child token's scope (reads of
/// its own child, 404 elsewhere, 403 on writes), what revocations do, and the child's feed.
final class ChildDeviceTests: XCTestCase {
    var s: TestServer!
    override func setUpWithError() throws { s = try TestServer() }
    override func tearDown() { s.stop() }

    struct Family {
        var owner: (id: String, token: String)
        var household: String
        var ada: String
        var ben: String
    }

    func family(_ handle: String = "mum") -> Family {
        let owner = s.signup(TestServer.handle(handle))
        let h = s.household(owner.token)
        return Family(owner: owner, household: h, ada: s.child(owner.token, household: h, name: "Ada"),
                      ben: s.child(owner.token, household: h, name: "Ben"))
    }

    /// Pairs a device for `child` with `token`; returns the redemption's answer.
    func pair(_ token: String, _ household: String, _ child: String, device: String? = nil) -> TestServer.Reply {
        let issued = s.call("POST", "/v1/households/\(household)/children/\(child)/devices", token: token,
                            json: device.map { .obj(["deviceName": .string($0)]) } ?? .obj([:]))
        XCTAssertEqual(issued.status, 201, String(decoding: issued.body, as: UTF8.self))
        return s.call("POST", "/v1/link-codes/redeem", json: .obj(["code": issued.json["code"] ?? .null]))
    }

    func childToken(_ f: Family, _ child: String) -> String {
        let r = pair(f.owner.token, f.household, child)
        XCTAssertEqual(r.status, 201, String(decoding: r.body, as: UTF8.self))
        return r.json["token"]?["secret"]?.stringValue ?? ""
    }

    func transaction(_ f: Family, _ child: String, _ cents: Int64) -> String {
        let r = s.call("POST", "/v1/households/\(f.household)/children/\(child)/transactions", token: f.owner.token,
                       json: .obj(["amountCents": .int(cents)]))
        XCTAssertEqual(r.status, 201)
        return r.json["transaction"]?["id"]?.stringValue ?? ""
    }

    // MARK: pairing

    func testPairingGivesAChildTokenOfNoAccount() {
        let f = family()
        let r = pair(f.owner.token, f.household, f.ada, device: "Ada's iPad")
        XCTAssertEqual(r.status, 201, String(decoding: r.body, as: UTF8.self))
        XCTAssertEqual(r.json["child"]?["householdId"]?.stringValue, f.household)
        XCTAssertEqual(r.json["child"]?["childId"]?.stringValue, f.ada)
        XCTAssertEqual(r.json["child"]?["name"]?.stringValue, "Ada")
        XCTAssertEqual(r.json["token"]?["kind"]?.stringValue, "child")
        XCTAssertNil(r.json["account"]?.objectValue, "a child token belongs to no account")
        let secret = r.json["token"]!["secret"]!.stringValue!
        XCTAssertEqual(s.call("GET", "/v1/households/\(f.household)/children/\(f.ada)", token: secret).status, 200)
        // The parent's devices do not list it, nor count it; the child's devices do.
        let tokens = s.call("GET", "/v1/tokens", token: f.owner.token).json["items"]?.arrayValue ?? []
        XCTAssertEqual(tokens.count, 1)
        let devices = s.call("GET", "/v1/households/\(f.household)/children/\(f.ada)/devices", token: f.owner.token)
        XCTAssertEqual(devices.status, 200)
        XCTAssertEqual(devices.json["items"]?.arrayValue?.map { $0["deviceName"]?.stringValue }, ["Ada's iPad"])
        XCTAssertEqual(devices.json["items"]?.arrayValue?.first?["id"]?.stringValue, r.json["token"]?["id"]?.stringValue)
        XCTAssertEqual(devices.json["items"]?.arrayValue?.first?["pairedBy"]?.stringValue, f.owner.id)
        // Single use.
        XCTAssertEqual(s.call("GET", "/v1/households/\(f.household)/children/\(f.ben)/devices", token: f.owner.token)
            .json["items"]?.arrayValue?.count, 0)
    }

    func testOnlyWritersPairAndOnlyForTheirChildren() {
        let f = family()
        let reader = s.signup(TestServer.handle("gran"))
        _ = s.call("POST", "/v1/households/\(f.household)/share", token: f.owner.token)
        let inv = s.call("POST", "/v1/households/\(f.household)/share/participants", token: f.owner.token,
                         json: .obj(["handle": .string(s.call("GET", "/v1/me", token: reader.token).json["account"]!["handle"]!.stringValue!),
                                     "permission": "readOnly"]))
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(inv.json["invitationId"]!.stringValue!)/accept", token: reader.token).status, 200)
        let path = "/v1/households/\(f.household)/children/\(f.ada)/devices"
        XCTAssertEqual(s.call("POST", path, token: reader.token, json: .obj([:])).code, "read_only")
        XCTAssertEqual(s.call("GET", path, token: reader.token).status, 200, "readers list the devices")
        let stranger = s.signup(TestServer.handle("eve"))
        XCTAssertEqual(s.call("POST", path, token: stranger.token, json: .obj([:])).status, 404)
        XCTAssertEqual(s.call("GET", path, token: stranger.token).status, 404)
        XCTAssertEqual(s.call("POST", "/v1/households/\(f.household)/children/\(UUID().lowercased)/devices", token: f.owner.token,
                              json: .obj([:])).status, 404)
        // Another household's child under this household's id: not found.
        let other = family("dad")
        XCTAssertEqual(s.call("POST", "/v1/households/\(f.household)/children/\(other.ada)/devices", token: f.owner.token,
                              json: .obj([:])).status, 404)
    }

    // MARK: scope

    func testAChildTokenReadsItsChildAndNothingElse() {
        let f = family()
        let mine = transaction(f, f.ada, 500)
        let bens = transaction(f, f.ben, 700)
        let schedule = s.call("POST", "/v1/households/\(f.household)/children/\(f.ben)/schedules", token: f.owner.token,
                              json: .obj(["kind": "allowance", "amountCents": 100, "cadence": "weekly", "firstDate": "2030-01-01",
                                          "timeZone": "UTC"]))
        XCTAssertEqual(schedule.status, 201, String(decoding: schedule.body, as: UTF8.self))
        let bensSchedule = schedule.json["id"]!.stringValue!
        let t = childToken(f, f.ada)
        let h = "/v1/households/\(f.household)"
        // Its own child.
        XCTAssertEqual(s.call("GET", "\(h)/children/\(f.ada)", token: t).json["balanceCents"]?.intValue, 500)
        XCTAssertEqual(s.call("GET", "\(h)/children/\(f.ada)/transactions", token: t).json["items"]?.arrayValue?.count, 1)
        XCTAssertEqual(s.call("GET", "\(h)/transactions/\(mine)", token: t).status, 200)
        XCTAssertEqual(s.call("GET", "\(h)/children/\(f.ada)/schedules", token: t).status, 200)
        XCTAssertEqual(s.call("GET", "\(h)/children/\(f.ada)/requests", token: t).status, 200)
        XCTAssertEqual(s.call("GET", "\(h)/children/\(f.ada)/changes", token: t).status, 200)
        // Another child of the same household: 404, whether it exists or not.
        for path in ["\(h)/children/\(f.ben)", "\(h)/children/\(f.ben)/transactions", "\(h)/transactions/\(bens)",
                     "\(h)/children/\(f.ben)/schedules", "\(h)/schedules/\(bensSchedule)", "\(h)/children/\(f.ben)/requests",
                     "\(h)/children/\(f.ben)/changes", "\(h)/children/\(UUID().lowercased)", "\(h)/transactions/\(UUID().lowercased)",
                     "\(h)/children/\(f.ada)/devices"] {
            let r = s.call("GET", path, token: t)
            XCTAssertEqual(r.status, 404, path)
            XCTAssertEqual(r.code, "not_found", path)
        }
        // The household as a whole, and the account routes: 404.
        for path in [h, "\(h)/children", "\(h)/transactions", "\(h)/changes", "\(h)/share", "\(h)/sync-status",
                     "\(h)/subscription", "\(h)/entitlement", "\(h)/entitlement/token", "/v1/households", "/v1/me", "/v1/tokens",
                     "/v1/invitations", "/v1/blocks", "/v1/me/identities", "/v1/me/recovery-codes"] {
            XCTAssertEqual(s.call("GET", path, token: t).status, 404, path)
        }
        // Another household: the same 404 as for a non-member.
        let other = family("dad")
        let otherTx = transaction(other, other.ada, 1)
        for path in ["/v1/households/\(other.household)/children/\(other.ada)",
                     "/v1/households/\(other.household)/transactions/\(otherTx)",
                     "/v1/households/\(other.household)/children/\(other.ada)/changes",
                     "/v1/households/\(other.household)/children/\(f.ada)"] {
            XCTAssertEqual(s.call("GET", path, token: t).status, 404, path)
        }
    }

    func testAChildTokenWritesNothingButRequests() {
        let f = family()
        let tx = transaction(f, f.ada, 500)
        let t = childToken(f, f.ada)
        let h = "/v1/households/\(f.household)"
        let writes: [(String, String, JSONValue)] = [
            ("POST", "\(h)/children/\(f.ada)/transactions", .obj(["amountCents": 100])),
            ("PATCH", "\(h)/children/\(f.ada)", .obj(["name": "Ace"])),
            ("POST", "\(h)/transactions/\(tx)/reversal", .obj([:])),
            ("POST", "\(h)/children/\(f.ada)/undo-last", .obj([:])),
            ("POST", "\(h)/children/\(f.ada)/schedules", .obj(["kind": "allowance"])),
            ("POST", "\(h)/children/\(f.ada)/devices", .obj([:])),
            ("POST", "\(h)/children/\(f.ben)/requests", .obj(["kind": "spend", "amountCents": 1])),
            ("POST", "\(h)/requests/\(UUID().lowercased)/approve", .obj([:])),
            ("POST", "\(h)/requests/\(UUID().lowercased)/decline", .obj([:])),
            ("POST", "\(h)/children", .obj(["name": "Cy"])),
            ("PATCH", h, .obj(["name": "Mine"])),
            ("DELETE", h, .obj([:])),
            ("POST", "\(h)/share", .obj([:])),
            ("POST", "\(h)/share/participants", .obj(["handle": "someone", "permission": "readWrite"])),
            ("POST", "\(h)/changes", .obj(["children": .array([])])),
            ("POST", "/v1/tokens", .obj(["deviceName": "x"])),
            ("POST", "/v1/link-codes", .obj([:])),
            ("POST", "/v1/households", .obj(["name": "Mine"])),
            ("POST", "/v1/me/recovery-codes", .obj([:])),
            ("DELETE", "/v1/me", .obj(["confirmHandle": "x"])),
        ]
        for (method, path, body) in writes {
            let r = s.call(method, path, token: t, json: body)
            XCTAssertEqual(r.status, 403, "\(method) \(path): \(String(decoding: r.body, as: UTF8.self))")
            XCTAssertEqual(r.code, "read_only", "\(method) \(path)")
        }
        // A request id of another child: taken, and nothing of it shown.
        let bens = s.call("POST", "\(h)/children/\(f.ben)/requests", token: f.owner.token,
                          json: .obj(["kind": "spend", "amountCents": 777, "note": "Ben's secret"]))
        XCTAssertEqual(bens.status, 201)
        let taken = s.call("POST", "\(h)/children/\(f.ada)/requests", token: t,
                           json: .obj(["id": bens.json["id"]!, "kind": "spend", "amountCents": 777, "note": "Ben's secret"]))
        XCTAssertEqual(taken.code, "id_conflict")
        XCTAssertNil(taken.json["current"]?.objectValue)
        XCTAssertFalse(String(decoding: taken.body, as: UTF8.self).contains("secret"))
        XCTAssertFalse(String(decoding: taken.body, as: UTF8.self).contains(f.ben))
        // Another household's writes: 404, as for a non-member.
        let other = family("dad")
        XCTAssertEqual(s.call("POST", "/v1/households/\(other.household)/children/\(other.ada)/requests", token: t,
                              json: .obj(["kind": "spend", "amountCents": 1])).status, 404)
        XCTAssertEqual(s.call("PATCH", "/v1/households/\(other.household)", token: t, json: .obj(["name": "x"])).status, 404)
        // Nothing was written.
        XCTAssertEqual(s.call("GET", "\(h)/children/\(f.ada)", token: f.owner.token).json["balanceCents"]?.intValue, 500)
        XCTAssertEqual(s.call("GET", "\(h)/children", token: f.owner.token).json["items"]?.arrayValue?.count, 2)
    }

    // MARK: what ends a child's device

    func testRevokedDeviceIsUnauthenticated() {
        let f = family()
        let r = pair(f.owner.token, f.household, f.ada)
        let t = r.json["token"]!["secret"]!.stringValue!, id = r.json["token"]!["id"]!.stringValue!
        let path = "/v1/households/\(f.household)/children/\(f.ada)"
        XCTAssertEqual(s.call("GET", path, token: t).status, 200)
        // Revoked under another child's path: not found, nothing revoked.
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(f.household)/children/\(f.ben)/devices/\(id)", token: f.owner.token).status, 404)
        XCTAssertEqual(s.call("GET", path, token: t).status, 200)
        XCTAssertEqual(s.call("DELETE", "\(path)/devices/\(id)", token: f.owner.token).status, 204)
        let after = s.call("GET", path, token: t)
        XCTAssertEqual(after.status, 401)
        XCTAssertEqual(after.code, "unauthenticated")
        XCTAssertEqual(s.call("DELETE", "\(path)/devices/\(id)", token: f.owner.token).status, 404)
    }

    func testTheDeviceOutlivesThePairingParentAndArchiving() {
        let f = family()
        let dad = s.joinedParticipant(f.household, owner: f.owner.token, handle: TestServer.handle("dad"))
        let r = pair(dad.token, f.household, f.ada)
        XCTAssertEqual(r.status, 201)
        let t = r.json["token"]!["secret"]!.stringValue!
        let path = "/v1/households/\(f.household)/children/\(f.ada)"
        // The pairing parent leaves: the device stays (it lives with the household).
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(f.household)/share/participants/\(dad.id)", token: dad.token).status, 204)
        XCTAssertEqual(s.call("GET", path, token: t).status, 200)
        // Archiving the child keeps its device reading.
        XCTAssertEqual(s.call("PATCH", path, token: f.owner.token, json: .obj(["archived": true])).status, 200)
        let archived = s.call("GET", path, token: t)
        XCTAssertEqual(archived.status, 200)
        XCTAssertEqual(archived.json["archived"]?.boolValue, true)
        // Deleting the household ends it: 401.
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(f.household)", token: f.owner.token).status, 204)
        XCTAssertEqual(s.call("GET", path, token: t).status, 401)
    }

    func testACodeOfAParentWhoLostAccessPairsNothing() {
        let f = family()
        let dad = s.joinedParticipant(f.household, owner: f.owner.token, handle: TestServer.handle("dad"))
        let issued = s.call("POST", "/v1/households/\(f.household)/children/\(f.ada)/devices", token: dad.token, json: .obj([:]))
        XCTAssertEqual(issued.status, 201)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(f.household)/share/participants/\(dad.id)", token: f.owner.token).status, 204)
        let r = s.call("POST", "/v1/link-codes/redeem", json: .obj(["code": issued.json["code"]!]))
        XCTAssertEqual(r.status, 404)
        XCTAssertEqual(r.code, "link_code_invalid")
    }

    // MARK: the child's feed

    func testTheChildFeedHoldsOnlyItsChildAndRefusesTheHouseholdsPositions() {
        let f = family()
        _ = transaction(f, f.ada, 500)
        _ = transaction(f, f.ben, 700)
        let t = childToken(f, f.ada)
        let h = "/v1/households/\(f.household)"
        let first = s.call("GET", "\(h)/children/\(f.ada)/changes", token: t)
        XCTAssertEqual(first.status, 200, String(decoding: first.body, as: UTF8.self))
        XCTAssertEqual(first.json["children"]?.arrayValue?.map { $0["id"]?.stringValue }, [f.ada])
        XCTAssertEqual(first.json["transactions"]?.arrayValue?.map { $0["amountCents"]?.intValue }, [500])
        XCTAssertEqual(first.json["access"]?["role"]?.stringValue, "child")
        XCTAssertNil(first.json["household"]?["ownerAccountId"]?.stringValue)
        let childToken = first.json["nextToken"]!.stringValue!
        // Ben's changes move the position on, and are never sent.
        _ = transaction(f, f.ben, 1)
        let mine = transaction(f, f.ada, 2)
        let next = s.call("GET", "\(h)/children/\(f.ada)/changes?since=\(childToken)", token: t)
        XCTAssertEqual(next.json["transactions"]?.arrayValue?.map { $0["id"]?.stringValue }, [mine])
        XCTAssertEqual(next.json["children"]?.arrayValue?.count, 0)
        // Each feed refuses the other's positions.
        let household = s.call("GET", "\(h)/changes", token: f.owner.token).json["nextToken"]!.stringValue!
        XCTAssertEqual(s.call("GET", "\(h)/changes?since=\(childToken)", token: f.owner.token).code, "token_expired")
        XCTAssertEqual(s.call("GET", "\(h)/children/\(f.ada)/changes?since=\(household)", token: t).code, "token_expired")
        // Another child's position too.
        let bens = s.call("GET", "\(h)/children/\(f.ben)/changes", token: f.owner.token)
        XCTAssertEqual(bens.status, 200)
        XCTAssertEqual(s.call("GET", "\(h)/children/\(f.ada)/changes?since=\(bens.json["nextToken"]!.stringValue!)", token: t).code,
                       "token_expired")
    }

    func testRevocationEndsTheChildsLongPollWith401() throws {
        let f = family()
        let r = pair(f.owner.token, f.household, f.ada)
        let t = r.json["token"]!["secret"]!.stringValue!, id = r.json["token"]!["id"]!.stringValue!
        let h = "/v1/households/\(f.household)"
        let since = s.call("GET", "\(h)/children/\(f.ada)/changes", token: t).json["nextToken"]!.stringValue!
        let done = expectation(description: "long-poll answered")
        let status = Locked(0)
        let started = Date()
        let server: TestServer = s
        DispatchQueue.global().async {
            let answer = server.call("GET", "\(h)/children/\(f.ada)/changes?since=\(since)&wait=20", token: t, timeout: 30).status
            status.withLock { $0 = answer }
            done.fulfill()
        }
        Thread.sleep(forTimeInterval: 0.5)
        // A change to another child does not answer the child's long-poll.
        _ = transaction(f, f.ben, 1)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(status.withLock { $0 }, 0)
        XCTAssertEqual(s.call("DELETE", "\(h)/children/\(f.ada)/devices/\(id)", token: f.owner.token).status, 204)
        wait(for: [done], timeout: 10)
        XCTAssertEqual(status.withLock { $0 }, 401)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10)
    }
}
