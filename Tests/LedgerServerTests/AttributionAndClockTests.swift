import Foundation
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
import XCTest

extension TestServer {
    /// Shares `household` with a new account `handle` (read-write) that accepts; returns it.
    func joinedParticipant(_ household: String, owner: String, handle: String) -> (id: String, token: String) {
        let member = signup(handle)
        _ = call("POST", "/v1/households/\(household)/share", token: owner)
        let invited = call("POST", "/v1/households/\(household)/share/participants", token: owner,
                           json: .obj(["handle": .string(handle), "permission": "readWrite"]))
        precondition(invited.status == 201, "invite failed: \(invited.status)")
        let accepted = call("POST", "/v1/invitations/\(invited.json["invitationId"]!.stringValue!)/accept", token: member.token)
        precondition(accepted.status == 200, "accept failed: \(accepted.status)")
        return member
    }
}

/// Who and when a record says it was written: `modifiedBy` is the caller, stamps stay inside
/// RFC 3339's years and no more than 24 hours ahead of the server's clock.
final class AttributionAndClockTests: XCTestCase {
    var s: TestServer!
    override func setUpWithError() throws { s = try TestServer() }
    override func tearDown() { s.stop() }

    func testModifiedByMustBeTheCaller() {
        let (owner, t) = s.signup("mum")
        let h = s.household(t)
        let dad = s.joinedParticipant(h, owner: t, handle: "dad")
        let kid = SyncRecords.newId()
        let forged = s.pushResults(dad.token, h, children: [SyncRecords.child(kid, name: "Ada", modifiedBy: owner)])
        XCTAssertEqual(forged.first?["status"]?.stringValue, "rejected")
        XCTAssertEqual(forged.first?["code"]?.stringValue, "modified_by_mismatch")
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(kid)", token: t).status, 404, "nothing stored")

        let own = s.pushResults(dad.token, h, children: [SyncRecords.child(kid, name: "Ada", modifiedBy: dad.id)])
        XCTAssertEqual(own.first?["status"]?.stringValue, "saved")
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(kid)", token: t).json["modifiedBy"]?.stringValue, dad.id)
    }

    func testStampsAtTheEndOfYear9999NeverLeaveIt() {
        let (acct, t) = s.signup("mum")
        let h = s.household(t)
        let kid = SyncRecords.newId()
        // Refused at the door: RFC 3339 in year 10000 once the offset is applied, or far in the future.
        var late = SyncRecords.child(kid, name: "Ada", modifiedBy: acct).objectValue!
        late["modifiedAt"] = "9999-12-31T23:30:00-01:00"
        let r = s.pushResults(t, h, children: [.object(late)])
        XCTAssertEqual(r.first?["code"]?.stringValue, "validation_failed")

        // A child stored with the last instant (as an older server accepted it), then edited.
        XCTAssertEqual(s.pushResults(t, h, children: [SyncRecords.child(kid, name: "Ada", modifiedBy: acct)]).first?["status"]?.stringValue, "saved")
        try? s.execute("UPDATE children SET modified_at = ? WHERE id = ?", [.integer(Timestamp.maxMs), .text(kid)],
                       postgres: "UPDATE children SET modified_at = to_timestamp($1 / 1000.0) WHERE id = $2::uuid")
        let edited = s.call("PATCH", "/v1/households/\(h)/children/\(kid)", token: t, json: .obj(["name": "Ada L."]))
        XCTAssertEqual(edited.status, 200)
        XCTAssertEqual(edited.json["modifiedAt"]?.stringValue, "9999-12-31T23:59:59.999Z")
        let pulled = s.pullAll(t, h).children.first { $0["id"]?.stringValue == kid }
        XCTAssertEqual(pulled?["modifiedAt"]?.stringValue, "9999-12-31T23:59:59.999Z")
        // And the last instant itself is years ahead of the clock.
        var last = SyncRecords.child(SyncRecords.newId(), name: "Bo", modifiedBy: acct).objectValue!
        last["modifiedAt"] = "9999-12-31T23:59:59.999Z"
        XCTAssertEqual(s.pushResults(t, h, children: [.object(last)]).first?["code"]?.stringValue, "clock_skew")
    }

    func testStampsMoreThanADayAheadAreClockSkew() {
        let (acct, t) = s.signup("mum")
        let h = s.household(t)
        let c = s.child(t, household: h)
        let now = Timestamp.nowMs()
        let future = now + 2 * 86_400_000
        let soon = now + 3_600_000

        let posted = s.call("POST", "/v1/households/\(h)/children/\(c)/transactions", token: t,
                            json: .obj(["amountCents": 5, "createdAt": SyncRecords.ts(future)]))
        XCTAssertEqual(posted.status, 422)
        XCTAssertEqual(posted.code, "clock_skew")
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(c)/transactions", token: t,
                              json: .obj(["amountCents": 5, "createdAt": SyncRecords.ts(soon)])).status, 201, "an hour ahead is fine")

        let kid = SyncRecords.newId(), kid2 = SyncRecords.newId(), tx = SyncRecords.newId()
        let results = s.pushResults(t, h, children: [SyncRecords.child(kid, name: "Bo", modifiedAt: future, modifiedBy: acct),
                                                     SyncRecords.child(kid2, name: "Cy", modifiedAt: soon, modifiedBy: acct)],
                                    transactions: [SyncRecords.transaction(tx, child: c, amount: 7, createdAt: future)])
        XCTAssertEqual(results.map { $0["status"]?.stringValue }, ["rejected", "saved", "rejected"])
        XCTAssertEqual(results.map { $0["code"]?.stringValue }, ["clock_skew", nil, "clock_skew"])
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(kid)", token: t).status, 404)
    }

    func testReusedIdempotencyKeyIsNamed() {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let c = s.child(t, household: h)
        let path = "/v1/households/\(h)/children/\(c)/transactions"
        XCTAssertEqual(s.call("POST", path, token: t, json: .obj(["amountCents": 5]), headers: ["Idempotency-Key": "pocket-money-1"]).status, 201)
        XCTAssertEqual(s.call("POST", path, token: t, json: .obj(["amountCents": 5]), headers: ["Idempotency-Key": "pocket-money-1"]).status, 200)
        let other = s.call("POST", path, token: t, json: .obj(["amountCents": 6]), headers: ["Idempotency-Key": "pocket-money-1"])
        XCTAssertEqual(other.status, 409)
        XCTAssertEqual(other.code, "id_conflict")
        XCTAssertTrue(other.json["detail"]?.stringValue?.contains("Idempotency-Key \"pocket-money-1\"") == true,
                      other.json["detail"]?.stringValue ?? "")
    }
}
