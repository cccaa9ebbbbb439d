import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
@testable import LedgerStorageSQLite
import XCTest

/// `DELETE /v1/me` over HTTP (both backends).
final class AccountDeletionTests: XCTestCase {
    var s: TestServer!

    override func tearDown() { s?.stop() }

    func delete(_ token: String, confirm: String, shared: String? = nil) -> TestServer.Reply {
        var body: JSONObject = ["confirmHandle": .string(confirm)]
        if let shared { body["ownedSharedHouseholds"] = .string(shared) }
        return s.call("DELETE", "/v1/me", token: token, json: .object(body))
    }

    func testTheHandleMustConfirm() throws {
        s = try TestServer()
        let handle = TestServer.handle("d")
        let (_, token) = s.signup(handle)
        for confirm in [handle.uppercased(), handle + " ", "someone-else", ""] {
            let r = delete(token, confirm: confirm)
            XCTAssertEqual(r.status, 422, confirm)
            XCTAssertEqual(r.code, "confirmation_mismatch", confirm)
        }
        XCTAssertEqual(s.call("DELETE", "/v1/me", token: token).code, "invalid_json", "a body is required")
        XCTAssertEqual(s.call("DELETE", "/v1/me", token: token, json: .obj(["confirmHandle": .string(handle),
                                                                          "ownedSharedHouseholds": "keep"])).code, "validation_failed")
        XCTAssertEqual(s.call("GET", "/v1/me", token: token).status, 200, "nothing happened")
    }

    /// Every token is 401 afterwards, a parked long-poll ends, and households owned alone are
    /// gone (with the invitations they had out).
    func testDeletionRevokesEveryTokenAndDeletesHouseholdsOwnedAlone() throws {
        s = try TestServer()
        let handle = TestServer.handle("d")
        let (_, token) = s.signup(handle)
        let spare = s.call("POST", "/v1/tokens", token: token, json: .obj(["deviceName": "Tablet"])).json["secret"]!.stringValue!
        let alone = s.household(token)
        let withInvitee = s.household(token)
        let invitee = s.member(of: withInvitee, owner: token, accept: false)
        XCTAssertEqual(s.call("GET", "/v1/invitations", token: invitee.token).json["items"]?.arrayValue?.count, 1)
        let since = s.call("GET", "/v1/households/\(alone)/changes", token: spare).json["nextToken"]!.stringValue!
        let server = s!
        let parked = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var poll: TestServer.Reply?
        Thread {
            poll = server.call("GET", "/v1/households/\(alone)/changes?since=\(since)&wait=20", token: spare)
            parked.signal()
        }.start()
        usleep(300_000)

        XCTAssertEqual(delete(token, confirm: handle).status, 204)
        XCTAssertEqual(parked.wait(timeout: .now() + 10), .success)
        XCTAssertEqual(poll?.status, 401)
        for t in [token, spare] {
            let r = s.call("GET", "/v1/me", token: t)
            XCTAssertEqual(r.status, 401)
            XCTAssertEqual(r.code, "unauthenticated")
        }
        XCTAssertEqual(s.call("GET", "/v1/invitations", token: invitee.token).json["items"]?.arrayValue?.count, 0)
        XCTAssertEqual(s.call("GET", "/v1/households/\(withInvitee)", token: invitee.token).status, 404)
        XCTAssertEqual(try s.int("SELECT COUNT(*) FROM households WHERE id IN (?, ?)", [.text(alone), .text(withInvitee)]), 0)
    }

    /// A household with other members refuses the deletion, listing every such household;
    /// `delete` deletes them, and their members' devices see them deleted (404).
    func testOwnedSharedHouseholdsRefuseUnlessAskedToDelete() throws {
        s = try TestServer()
        let handle = TestServer.handle("d")
        let (_, token) = s.signup(handle)
        let shared1 = s.household(token), shared2 = s.household(token), alone = s.household(token)
        let m1 = s.member(of: shared1, owner: token)
        let m2 = s.member(of: shared2, owner: token, permission: "readOnly")
        let child = s.child(token, household: shared1)
        let since = s.call("GET", "/v1/households/\(shared1)/changes", token: m1.token).json["nextToken"]!.stringValue!

        let refused = delete(token, confirm: handle)
        XCTAssertEqual(refused.status, 409)
        XCTAssertEqual(refused.code, "owner_of_shared_household")
        XCTAssertEqual(refused.json["households"]?.arrayValue?.compactMap(\.stringValue), [shared1, shared2].sorted())
        XCTAssertEqual(delete(token, confirm: handle, shared: "refuse").code, "owner_of_shared_household")
        XCTAssertEqual(s.call("GET", "/v1/households/\(alone)", token: token).status, 200, "a refusal deletes nothing")
        XCTAssertEqual(s.call("GET", "/v1/households/\(shared1)/children/\(child)", token: m1.token).status, 200)

        XCTAssertEqual(delete(token, confirm: handle, shared: "delete").status, 204)
        for (h, m) in [(shared1, m1.token), (shared2, m2.token)] {
            XCTAssertEqual(s.call("GET", "/v1/households/\(h)", token: m).status, 404)
            XCTAssertEqual(s.call("GET", "/v1/households/\(h)/changes", token: m).status, 404)
        }
        XCTAssertEqual(s.call("GET", "/v1/households/\(shared1)/changes?since=\(since)", token: m1.token).status, 404)
        XCTAssertEqual(s.call("GET", "/v1/households", token: m1.token).json["items"]?.arrayValue?.count, 0)
    }

    /// The account leaves the households it joined; what it wrote there keeps its id as
    /// `modifiedBy` and `authorAccountId`, and the share lists it as a deleted account.
    func testRecordsInOtherHouseholdsStayAttributed() throws {
        s = try TestServer()
        let (_, owner) = s.signup(TestServer.handle("o"))
        let h = s.household(owner)
        let me = s.member(of: h, owner: owner)
        let child = s.child(me.token, household: h)
        let tx = s.call("POST", "/v1/households/\(h)/children/\(child)/transactions", token: me.token, json: .obj(["amountCents": 300]))
        let txId = tx.json["transaction"]!["id"]!.stringValue!
        let pending = s.household(owner, name: "Second")
        _ = s.call("POST", "/v1/households/\(pending)/share", token: owner)
        XCTAssertEqual(s.call("POST", "/v1/households/\(pending)/share/participants", token: owner,
                              json: .obj(["handle": .string(me.handle), "permission": "readWrite"])).status, 201)
        let since = s.call("GET", "/v1/households/\(h)/changes", token: owner).json["nextToken"]!.stringValue!

        XCTAssertEqual(delete(me.token, confirm: me.handle).status, 204)
        let kid = s.call("GET", "/v1/households/\(h)/children/\(child)", token: owner).json
        XCTAssertEqual(kid["modifiedBy"]?.stringValue, me.id)
        XCTAssertEqual(kid["balanceCents"], .int(300))
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/transactions/\(txId)", token: owner).json["authorAccountId"]?.stringValue, me.id)
        let participants = s.call("GET", "/v1/households/\(h)/share", token: owner).json["participants"]?.arrayValue ?? []
        let gone = participants.first { $0["accountId"]?.stringValue == me.id }
        XCTAssertEqual(gone?["status"]?.stringValue, "left")
        XCTAssertEqual(gone?["handle"], .null)
        XCTAssertEqual(gone?["displayName"]?.stringValue, "Deleted account")
        // The pending invitation is gone; the feed of the household it left moved.
        let invited = s.call("GET", "/v1/households/\(pending)/share", token: owner).json["participants"]?.arrayValue ?? []
        XCTAssertFalse(invited.contains { $0["accountId"]?.stringValue == me.id })
        XCTAssertNotEqual(s.call("GET", "/v1/households/\(h)/changes?since=\(since)", token: owner).json["nextToken"]?.stringValue, since)
        // Its handle finds no one to invite.
        XCTAssertEqual(s.call("POST", "/v1/households/\(pending)/share/participants", token: owner,
                              json: .obj(["handle": .string(me.handle), "permission": "readWrite"])).code, "unknown_handle")
    }

    /// The handle is refused to new accounts for 30 days, then free again.
    func testTheHandleIsRetiredForThirtyDays() throws {
        s = try TestServer()
        let handle = TestServer.handle("d")
        let (id, token) = s.signup(handle)
        XCTAssertEqual(delete(token, confirm: handle).status, 204)
        let again = s.call("POST", "/v1/accounts", json: .obj(["handle": .string(handle), "displayName": "New"]))
        XCTAssertEqual(again.status, 409)
        XCTAssertEqual(again.code, "handle_taken")
        let until = try s.int("SELECT reserved_until FROM retired_handles WHERE handle = ?", [.text(handle)],
                              postgres: "SELECT (extract(epoch FROM reserved_until) * 1000)::bigint FROM retired_handles WHERE handle = $1")
        XCTAssertEqual(Double(until - Timestamp.nowMs()), Double(AccountRecord.retiredHandleMs), accuracy: 60_000)
        // Thirty days later (the reservation moved into the past).
        try s.execute("UPDATE retired_handles SET reserved_until = ? WHERE handle = ?", [.integer(Timestamp.nowMs() - 1), .text(handle)],
                      postgres: "UPDATE retired_handles SET reserved_until = to_timestamp($1 / 1000.0) WHERE handle = $2")
        let later = s.call("POST", "/v1/accounts", json: .obj(["handle": .string(handle), "displayName": "New"]))
        XCTAssertEqual(later.status, 201)
        XCTAssertNotEqual(later.json["account"]?["id"]?.stringValue, id)
    }

    /// Recovery codes, link codes and blocks go with the account.
    func testCodesAndBlocksGoWithTheAccount() throws {
        s = try TestServer()
        let handle = TestServer.handle("d")
        let (id, token) = s.signup(handle)
        let codes = s.call("POST", "/v1/me/recovery-codes", token: token).json["codes"]!.arrayValue!.compactMap(\.stringValue)
        let link = s.call("POST", "/v1/link-codes", token: token).json["code"]!.stringValue!
        // A block the account made, and one made of it.
        let (_, other) = s.signup(TestServer.handle("x"))
        let h = s.household(other)
        _ = s.call("POST", "/v1/households/\(h)/share", token: other)
        let inv = s.call("POST", "/v1/households/\(h)/share/participants", token: other, json: .obj(["handle": .string(handle), "permission": "readOnly"]))
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(inv.json["invitationId"]!.stringValue!)/decline", token: token,
                              json: .obj(["block": true])).status, 204)

        XCTAssertEqual(delete(token, confirm: handle).status, 204)
        XCTAssertEqual(s.call("POST", "/v1/accounts/recover", json: .obj(["handle": .string(handle), "code": .string(codes[0])])).code,
                       "recovery_failed")
        XCTAssertEqual(s.call("POST", "/v1/link-codes/redeem", json: .obj(["code": .string(link)])).code, "link_code_invalid")
        XCTAssertEqual(try s.int("SELECT COUNT(*) FROM recovery_codes WHERE account_id = ?", [.text(id)]), 0)
        XCTAssertEqual(try s.int("SELECT COUNT(*) FROM link_codes WHERE account_id = ?", [.text(id)]), 0)
        XCTAssertEqual(try s.int("SELECT COUNT(*) FROM blocks WHERE account_id = ? OR blocked_account_id = ?", [.text(id), .text(id)]), 0)
        XCTAssertEqual(try s.int("SELECT COUNT(*) FROM accounts a JOIN deleted_accounts d ON d.account_id = a.id "
                                 + "WHERE a.id = ? AND a.display_name = 'Deleted account'", [.text(id)]), 1)
    }
}
