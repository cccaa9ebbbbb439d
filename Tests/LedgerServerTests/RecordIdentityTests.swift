import Foundation
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// Record identity is (household, id): ids taken in another household never block, conflict
/// with or reveal anything, and inside a household a transaction's reversal id is its undo's.
final class RecordIdentityTests: XCTestCase {
    var s: TestServer!
    override func setUpWithError() throws { s = try TestServer() }
    override func tearDown() { s.stop() }

    private func post(_ t: String, _ h: String, _ c: String, _ body: JSONValue, key: String? = nil) -> TestServer.Reply {
        s.call("POST", "/v1/households/\(h)/children/\(c)/transactions", token: t, json: body,
               headers: key.map { ["Idempotency-Key": $0] } ?? [:])
    }

    func testIdsSquattedInAnotherHouseholdBlockNothing() {
        let (mumId, mum) = s.signup("mum")
        let home = s.household(mum)
        let ann = s.child(mum, household: home)
        let tx = post(mum, home, ann, .obj(["amountCents": 500, "note": "gift"])).json["transaction"]!["id"]!.stringValue!
        let undoId = SyncRecords.reversalId(of: tx)

        // Someone who saw those ids copies them into a household of their own: a child with
        // Ann's id, a transaction with the id of the gift's undo, one with the gift's own id.
        let (_, eve) = s.signup("eve")
        let lair = s.household(eve)
        XCTAssertEqual(s.call("POST", "/v1/households/\(lair)/children", token: eve, json: .obj(["id": .string(ann), "name": "Decoy"])).status, 201)
        let squat = post(eve, lair, ann, .obj(["id": .string(undoId), "amountCents": 1]))
        XCTAssertEqual(squat.status, 201, "an id used elsewhere is free here")
        let copy = post(eve, lair, ann, .obj(["id": .string(tx), "amountCents": 2]))
        XCTAssertEqual(copy.status, 201, "nothing reveals that the id exists elsewhere")

        // Mum's undo, undo-last, and the child and ledger are untouched.
        let undo = s.call("POST", "/v1/households/\(home)/transactions/\(tx)/reversal", token: mum)
        XCTAssertEqual(undo.status, 201, String(decoding: undo.body, as: UTF8.self))
        XCTAssertEqual(undo.json["transaction"]?["id"]?.stringValue, undoId)
        XCTAssertEqual(undo.json["balanceCents"]?.intValue, 0)
        XCTAssertEqual(s.call("POST", "/v1/households/\(home)/transactions/\(tx)/reversal", token: mum).status, 200)
        XCTAssertEqual(s.call("GET", "/v1/households/\(home)/transactions/\(tx)", token: mum).json["reversedById"]?.stringValue, undoId)
        XCTAssertEqual(s.call("GET", "/v1/households/\(lair)/transactions/\(tx)", token: eve).json["amountCents"]?.intValue, 2)
        XCTAssertNil(s.call("GET", "/v1/households/\(lair)/transactions/\(tx)", token: eve).json["reversedById"]?.stringValue)
        XCTAssertEqual(s.call("GET", "/v1/households/\(home)/children/\(ann)", token: mum).json["name"]?.stringValue, "Ada")
        XCTAssertEqual(s.call("GET", "/v1/households/\(lair)/children/\(ann)", token: eve).json["balanceCents"]?.intValue, 3)

        let second = post(mum, home, ann, .obj(["amountCents": 40])).json["transaction"]!["id"]!.stringValue!
        XCTAssertEqual(post(eve, lair, ann, .obj(["id": .string(SyncRecords.reversalId(of: second)), "amountCents": 1])).status, 201)
        let last = s.call("POST", "/v1/households/\(home)/children/\(ann)/undo-last", token: mum,
                          json: .obj(["expectedTransactionId": .string(second)]))
        XCTAssertEqual(last.status, 201, String(decoding: last.body, as: UTF8.self))

        // A synced undo and a synced edit of the child are saved, not conflicts.
        let third = post(mum, home, ann, .obj(["amountCents": 7])).json["transaction"]!["id"]!.stringValue!
        let thirdUndo = SyncRecords.reversalId(of: third)
        XCTAssertEqual(post(eve, lair, ann, .obj(["id": .string(thirdUndo), "amountCents": 1])).status, 201)
        let tag = s.call("GET", "/v1/households/\(home)/children/\(ann)", token: mum).json["changeTag"]!.stringValue!
        let pushed = s.pushResults(mum, home, children: [SyncRecords.child(ann, name: "Ada L.", modifiedAt: Timestamp.nowMs(), modifiedBy: mumId, base: tag)],
                                   transactions: [SyncRecords.transaction(thirdUndo, child: ann, amount: -7, reverses: third)])
        XCTAssertEqual(pushed.map { $0["status"]?.stringValue }, ["saved", "saved"])
        XCTAssertEqual(s.call("GET", "/v1/households/\(home)/children/\(ann)", token: mum).json["balanceCents"]?.intValue, 0)

        // The same Idempotency-Key in two households makes two transactions.
        let other = s.household(mum, name: "Grandma's")
        let bo = s.child(mum, household: other, name: "Bo")
        XCTAssertEqual(post(mum, home, ann, .obj(["amountCents": 3]), key: "weekly-1").status, 201)
        XCTAssertEqual(post(mum, other, bo, .obj(["amountCents": 3]), key: "weekly-1").status, 201)
        XCTAssertEqual(post(mum, other, bo, .obj(["amountCents": 3]), key: "weekly-1").status, 200)

        let check = try? s.check()
        XCTAssertEqual(check?.problems, [])
    }

    func testAReversalIdIsReservedForThatReversal() {
        let (_, mum) = s.signup("mum")
        let home = s.household(mum)
        let ann = s.child(mum, household: home)
        let tx = post(mum, home, ann, .obj(["amountCents": 500])).json["transaction"]!["id"]!.stringValue!
        let undoId = SyncRecords.reversalId(of: tx)
        let dad = s.joinedParticipant(home, owner: mum, handle: "dad")

        let taken = post(dad.token, home, ann, .obj(["id": .string(undoId), "amountCents": 1]))
        XCTAssertEqual(taken.status, 409)
        XCTAssertEqual(taken.code, "id_reserved")
        XCTAssertNil(taken.json["current"], "nothing to show: no record has that id")
        let pushed = s.pushResults(dad.token, home, transactions: [SyncRecords.transaction(undoId, child: ann, amount: 1)])
        XCTAssertEqual(pushed.first?["status"]?.stringValue, "rejected")
        XCTAssertEqual(pushed.first?["code"]?.stringValue, "id_reserved")
        let wrongTarget = post(mum, home, ann, .obj(["amountCents": 9])).json["transaction"]!["id"]!.stringValue!
        let mismatched = s.pushResults(dad.token, home, transactions: [SyncRecords.transaction(undoId, child: ann, amount: -9, reverses: wrongTarget)])
        XCTAssertEqual(mismatched.first?["status"]?.stringValue, "rejected")

        // Its own reversal takes it; the undo works as ever.
        let undo = s.call("POST", "/v1/households/\(home)/transactions/\(tx)/reversal", token: dad.token)
        XCTAssertEqual(undo.status, 201)
        XCTAssertEqual(undo.json["transaction"]?["id"]?.stringValue, undoId)
        XCTAssertEqual(s.call("GET", "/v1/households/\(home)/children/\(ann)", token: mum).json["balanceCents"]?.intValue, 9)
    }
}
