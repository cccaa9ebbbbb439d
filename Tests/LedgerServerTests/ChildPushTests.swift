import Foundation
import LedgerServerTesting
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import XCTest

/// A child's device registers its own push key, and an outcome wakes it: a parent's
/// decision on the child's request, never the deciding parent's own device; a revoked child
/// device is woken no more; a child token reaches no other token's registration.
extension PushTests {
    /// A paired device of `child` in `household`: its secret and its token id.
    func pairChildDevice(_ owner: String, _ household: String, _ child: String) -> (token: String, id: String) {
        let code = s.call("POST", "/v1/households/\(household)/children/\(child)/devices", token: owner, json: .obj([:])).json["code"]!
        let r = s.call("POST", "/v1/link-codes/redeem", json: .obj(["code": code]))
        return (r.json["token"]!["secret"]!.stringValue!, r.json["token"]!["id"]!.stringValue!)
    }

    func childRegister(_ device: (token: String, id: String), key: String, tokenId: String? = nil) -> TestServer.Reply {
        s.call("PUT", "/v1/tokens/\(tokenId ?? device.id)/push", token: device.token,
               json: .obj(["appId": .string(Self.appId), "pushKey": .string(key)]))
    }

    func testAChildDeviceRegistersOnlyItsOwnToken() throws {
        try start()
        let f = family()
        let device = pairChildDevice(f.mum, f.household, f.child)
        let sibling = pairChildDevice(f.mum, f.household, s.child(f.mum, household: f.household, name: "Bo"))
        XCTAssertEqual(childRegister(device, key: Self.key()).status, 204)
        // Another token id — a parent's, a sibling's device, an unknown one — is the same 404.
        for other in [tokenId(f.mum), sibling.id, UUID().lowercased] {
            let r = childRegister(device, key: Self.key(), tokenId: other)
            XCTAssertEqual(r.status, 404, other)
            XCTAssertEqual(r.code, "not_found", other)
            XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(other)/push", token: device.token).status, 404, other)
        }
        XCTAssertEqual(try s.int("SELECT count(*) FROM push_registrations WHERE token_id = ?", [.text(sibling.id)]), 0)
        // The rest of /v1/tokens stays closed to a child's device.
        XCTAssertEqual(s.call("GET", "/v1/tokens", token: device.token).status, 404)
        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(device.id)", token: device.token).status, 403)
        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(device.id)/push", token: device.token).status, 204)
        XCTAssertEqual(try s.int("SELECT count(*) FROM push_registrations WHERE token_id = ?", [.text(device.id)]), 0)
    }

    func testADecisionWakesTheChildsDeviceNeverTheDecidingParentsOwn() throws {
        try start()
        let f = family()
        let device = pairChildDevice(f.mum, f.household, f.child)
        let childPhone = Self.key(), mumPhone = Self.key(), dadPhone = Self.key()
        XCTAssertEqual(childRegister(device, key: childPhone).status, 204)
        register(f.mum, key: mumPhone)
        register(f.dad.token, key: dadPhone)
        let base = "/v1/households/\(f.household)"

        // The child asks: the parents' devices are woken, not the asking device.
        let asked = s.call("POST", "\(base)/children/\(f.child)/requests", token: device.token,
                           json: .obj(["kind": "spend", "amountCents": 450]))
        XCTAssertEqual(asked.status, 201)
        try eventually("both parents are woken") { wakes(for: mumPhone).count == 1 && wakes(for: dadPhone).count == 1 }
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertTrue(wakes(for: childPhone).isEmpty, "never the asking device")

        // Mum approves: the child's device and Dad's are woken, not Mum's.
        let id = asked.json["id"]!.stringValue!
        XCTAssertEqual(s.call("POST", "\(base)/requests/\(id)/approve", token: f.mum, json: .obj([:])).status, 200)
        try eventually("the child's device is woken") { wakes(for: childPhone).count == 1 && wakes(for: dadPhone).count == 2 }
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(wakes(for: mumPhone).count, 1, "never the deciding parent's own device")
        let wake = try XCTUnwrap(wakes(for: childPhone).first?["notification"])
        XCTAssertEqual(wake["room_id"], .string(f.household))

        // Dad's decline wakes it too.
        let second = s.call("POST", "\(base)/children/\(f.child)/requests", token: device.token,
                            json: .obj(["kind": "chore", "amountCents": 100])).json["id"]!.stringValue!
        XCTAssertEqual(s.call("POST", "\(base)/requests/\(second)/decline", token: f.dad.token, json: .obj([:])).status, 200)
        try eventually("the child's device is woken again") { wakes(for: childPhone).count == 2 }
    }

    func testARevokedChildDeviceIsWokenNoMore() throws {
        try start()
        let f = family()
        let device = pairChildDevice(f.mum, f.household, f.child)
        let childPhone = Self.key(), dadPhone = Self.key()
        XCTAssertEqual(childRegister(device, key: childPhone).status, 204)
        register(f.dad.token, key: dadPhone)
        add(f.mum, f.household, f.child)
        try eventually("the child's device is woken by a payment") { wakes(for: childPhone).count == 1 }

        XCTAssertEqual(s.call("DELETE", "/v1/households/\(f.household)/children/\(f.child)/devices/\(device.id)", token: f.mum).status,
                       204)
        XCTAssertEqual(try s.int("SELECT count(*) FROM push_registrations WHERE token_id = ?", [.text(device.id)]), 0, "its registration went with it")
        add(f.mum, f.household, f.child)
        try eventually("Dad's phone is woken") { wakes(for: dadPhone).count == 2 }
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(wakes(for: childPhone).count, 1, "a revoked child device is not woken")
        XCTAssertEqual(try outboxRows(), 0)
    }

    func testDeletingTheHouseholdDropsItsChildDevicesRegistrations() throws {
        try start()
        let f = family()
        let device = pairChildDevice(f.mum, f.household, f.child)
        XCTAssertEqual(childRegister(device, key: Self.key()).status, 204)
        XCTAssertEqual(try s.int("SELECT count(*) FROM push_registrations WHERE token_id = ?", [.text(device.id)]), 1)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(f.household)", token: f.mum).status, 204)
        XCTAssertEqual(try s.int("SELECT count(*) FROM push_registrations WHERE token_id = ?", [.text(device.id)]), 0)
    }
}
