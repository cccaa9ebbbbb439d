import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import LedgerModel
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// Batch push: every result status, replays after lost responses, limits and access.
final class SyncPushTests: XCTestCase {
    var s: TestServer!
    override func setUpWithError() throws { s = try TestServer() }
    override func tearDown() { s.stop() }

    private func status(_ r: [JSONValue], _ i: Int) -> String? { r.count > i ? r[i]["status"]?.stringValue : nil }

    func testChildResults() {
        let (acct, t) = s.signup("mum")
        let h = s.household(t)
        let id = SyncRecords.newId()
        let created = s.pushResults(t, h, children: [SyncRecords.child(id, name: "Ada", modifiedBy: acct)])
        XCTAssertEqual(status(created, 0), "saved")
        XCTAssertEqual(created.first?["type"]?.stringValue, "child")
        let tag1 = created.first!["changeTag"]!.stringValue!

        // The same record again (its answer was lost): unchanged, never a conflict.
        let replay = s.pushResults(t, h, children: [SyncRecords.child(id, name: "Ada", modifiedBy: acct)])
        XCTAssertEqual(status(replay, 0), "unchanged")
        XCTAssertEqual(replay.first?["changeTag"]?.stringValue, tag1)

        // An edit on the current tag is saved with a new tag and the pushed stamps.
        let edit = SyncRecords.child(id, name: "Ada L.", sortOrder: 3, modifiedAt: 1_700_000_000_500, modifiedBy: acct, base: tag1)
        let saved = s.pushResults(t, h, children: [edit])
        XCTAssertEqual(status(saved, 0), "saved")
        let tag2 = saved.first!["changeTag"]!.stringValue!
        XCTAssertNotEqual(tag1, tag2)
        let stored = s.call("GET", "/v1/households/\(h)/children/\(id)", token: t).json
        XCTAssertEqual(stored["name"]?.stringValue, "Ada L.")
        XCTAssertEqual(stored["sortOrder"]?.intValue, 3)
        XCTAssertEqual(stored["modifiedAt"]?.stringValue, Timestamp.format(ms: 1_700_000_000_500))
        XCTAssertEqual(stored["changeTag"]?.stringValue, tag2)

        // That edit's answer was lost too: re-sent with the old base tag, it is unchanged.
        XCTAssertEqual(status(s.pushResults(t, h, children: [edit]), 0), "unchanged")

        // Another device edits on the stale tag: conflict with the server's record.
        let stale = s.pushResults(t, h, children: [SyncRecords.child(id, name: "Other", modifiedBy: acct, base: tag1)])
        XCTAssertEqual(status(stale, 0), "conflict")
        XCTAssertEqual(stale.first?["serverRecord"]?["name"]?.stringValue, "Ada L.")
        XCTAssertEqual(stale.first?["serverRecord"]?["changeTag"]?.stringValue, tag2)
        let noBase = s.pushResults(t, h, children: [SyncRecords.child(id, name: "Other", modifiedBy: acct)])
        XCTAssertEqual(status(noBase, 0), "conflict")

        // Field problems reject just that record.
        let other = SyncRecords.newId()
        let mixed = s.pushResults(t, h, children: [SyncRecords.child(SyncRecords.newId(), name: "   ", modifiedBy: acct),
                                                   SyncRecords.child(other, name: "Bo", modifiedBy: acct)])
        XCTAssertEqual(status(mixed, 0), "rejected")
        XCTAssertEqual(mixed.first?["code"]?.stringValue, "validation_failed")
        XCTAssertNotNil(mixed.first?["fields"]?["name"])
        XCTAssertEqual(status(mixed, 1), "saved")
        var missing = SyncRecords.child(SyncRecords.newId(), name: "X", modifiedBy: acct).objectValue!
        missing["archived"] = nil
        missing["colour"] = "red"
        let m = s.pushResults(t, h, children: [.object(missing)])
        XCTAssertEqual(m.first?["code"]?.stringValue, "validation_failed")
        XCTAssertNotNil(m.first?["fields"]?["archived"]); XCTAssertNotNil(m.first?["fields"]?["colour"])

        // A child id of another household is free here: a new child, the other one untouched.
        let h2 = s.household(t, name: "Second")
        let foreign = s.pushResults(t, h2, children: [SyncRecords.child(id, name: "Other Ada", modifiedBy: acct)])
        XCTAssertEqual(status(foreign, 0), "saved")
        XCTAssertNil(foreign.first?["serverRecord"])
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(id)", token: t).json["name"]?.stringValue, "Ada L.")
    }

    func testTransactionResults() throws {
        let (acct, t) = s.signup("mum")
        let h = s.household(t)
        let kid = SyncRecords.newId()
        let tx = SyncRecords.newId(), big = SyncRecords.newId()
        // The child is in the same batch, listed after the transaction: children apply first.
        let first = s.pushResults(t, h, children: [SyncRecords.child(kid, name: "Ada", modifiedBy: acct)],
                                  transactions: [SyncRecords.transaction(tx, child: kid, amount: 1_000, note: "pocket money")])
        XCTAssertEqual(first.map { $0["status"]?.stringValue }, ["saved", "saved"])
        XCTAssertEqual(first.map { $0["type"]?.stringValue }, ["child", "transaction"])

        let rev = SyncRecords.reversalId(of: tx)
        let r = s.pushResults(t, h, transactions: [
            SyncRecords.transaction(tx, child: kid, amount: 1_000, note: "pocket money"),            // replay
            SyncRecords.transaction(tx, child: kid, amount: 2_000),                                  // same id, other content
            SyncRecords.transaction(SyncRecords.newId(), child: SyncRecords.newId(), amount: 5),     // unknown child
            SyncRecords.transaction(SyncRecords.reversalId(of: kid), child: kid, amount: -5, reverses: SyncRecords.newId()), // unknown target
            SyncRecords.transaction(SyncRecords.newId(), child: kid, amount: -1_000, reverses: tx),  // wrong reversal id
            SyncRecords.transaction(rev, child: kid, amount: -999, reverses: tx),                    // wrong amount
            SyncRecords.transaction(rev, child: kid, amount: -1_000, reverses: tx),                  // the reversal
            SyncRecords.transaction(rev, child: kid, amount: -1_000, reverses: tx),                  // its replay
            SyncRecords.transaction(SyncRecords.reversalId(of: rev), child: kid, amount: 1_000, reverses: rev), // reversal of a reversal
            SyncRecords.transaction(SyncRecords.newId(), child: kid, amount: 0),                     // invalid amount
            SyncRecords.transaction(big, child: kid, amount: 100_000_000_000),
        ])
        XCTAssertEqual(r.map { $0["status"]?.stringValue },
                       ["unchanged", "conflict", "rejected", "rejected", "rejected", "rejected", "saved", "unchanged", "rejected", "rejected", "saved"])
        XCTAssertEqual(r.map { $0["code"]?.stringValue },
                       [nil, nil, "unknown_child", "unknown_transaction", "reversal_id_mismatch", "reversal_amount_mismatch",
                        nil, nil, "not_reversible", "validation_failed", nil])
        XCTAssertEqual(r[1]["serverRecord"]?["amountCents"]?.intValue, 1_000)
        XCTAssertEqual(r[1]["serverRecord"]?["id"]?.stringValue, tx)

        // New ids repeated within one batch (each looked up after the batch's ids were found
        // free): the first saved, the same again unchanged, other content a conflict; the
        // reversal of a transaction saved earlier in the batch is saved once.
        let fresh = SyncRecords.newId()
        let repeated = s.pushResults(t, h, transactions: [
            SyncRecords.transaction(fresh, child: kid, amount: 300),
            SyncRecords.transaction(fresh, child: kid, amount: 300),
            SyncRecords.transaction(fresh, child: kid, amount: 301),
            SyncRecords.transaction(SyncRecords.reversalId(of: fresh), child: kid, amount: -300, reverses: fresh),
            SyncRecords.transaction(SyncRecords.reversalId(of: fresh), child: kid, amount: -300, reverses: fresh),
        ])
        XCTAssertEqual(repeated.map { $0["status"]?.stringValue }, ["saved", "unchanged", "conflict", "saved", "unchanged"])
        XCTAssertEqual(repeated[2]["serverRecord"]?["amountCents"]?.intValue, 300)
        XCTAssertEqual(s.balance(t, h, kid), 100_000_000_000)

        // A balance at the edge of Int64 (set directly: reaching it takes 92 million pushes).
        try s.execute("UPDATE children SET balance_cents = ? WHERE id = ?", [.integer(Int64.max - 10), .text(kid)],
                      postgres: "UPDATE children SET balance_cents = $1 WHERE id = $2::uuid")
        let over = s.pushResults(t, h, transactions: [SyncRecords.transaction(SyncRecords.newId(), child: kid, amount: 11),
                                                      SyncRecords.transaction(SyncRecords.newId(), child: kid, amount: 10)])
        XCTAssertEqual(over.map { $0["status"]?.stringValue }, ["rejected", "saved"])
        XCTAssertEqual(over.first?["code"]?.stringValue, "balance_overflow")
    }

    func testLimitsEnvelopeAndAccess() throws {
        let (acct, t) = s.signup("mum")
        let h = s.household(t)
        let kid = s.child(t, household: h)
        let tooMany = (0..<401).map { _ in SyncRecords.transaction(SyncRecords.newId(), child: kid, amount: 1) }
        let big = s.push(t, h, transactions: tooMany)
        XCTAssertEqual(big.status, 413); XCTAssertEqual(big.code, "batch_too_large")
        let split = s.push(t, h, children: [SyncRecords.child(SyncRecords.newId(), name: "X", modifiedBy: acct)],
                           transactions: Array(tooMany.prefix(400)))
        XCTAssertEqual(split.status, 413)
        XCTAssertEqual(s.push(t, h, transactions: Array(tooMany.prefix(400))).json["results"]?.arrayValue?.count, 400)

        let env: [(String, String)] = [
            (#"{"children":{}}"#, "children"),
            (#"{"extra":[]}"#, "extra"),
            (#"{"transactions":[{"childId":"x"}]}"#, "transactions[0].id"),
            (#"{"children":[{"id":"nope"}]}"#, "children[0].id"),
            (#"{"transactions":[1]}"#, "transactions[0]"),
        ]
        for (body, field) in env {
            let r = s.call("POST", "/v1/households/\(h)/changes", token: t, rawBody: Data(body.utf8),
                           headers: ["Content-Type": "application/json"])
            XCTAssertEqual(r.status, 422, body); XCTAssertNotNil(r.json["fields"]?[field], body)
        }
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/changes", token: t, rawBody: Data(#"{"children":null}"#.utf8),
                              headers: ["Content-Type": "application/json"]).json["results"]?.arrayValue?.count, 0)

        // A read-only participant may pull but not push.
        let (reader, rt) = s.signup("gran")
        try s.execute("INSERT INTO participants (household_id, account_id, permission, status, invitation_id, invited_at, updated_at) VALUES (?, ?, 'readOnly', 'accepted', ?, 0, 0)",
                      [.text(h), .text(reader), .text(SyncRecords.newId())],
                      postgres: "INSERT INTO participants (household_id, account_id, permission, status, invitation_id, invited_at, updated_at) VALUES ($1::uuid, $2::uuid, 'readOnly', 'accepted', $3::uuid, now(), now())")
        let denied = s.push(rt, h, transactions: [SyncRecords.transaction(SyncRecords.newId(), child: kid, amount: 1)])
        XCTAssertEqual(denied.status, 403); XCTAssertEqual(denied.code, "read_only")
        let pulled = s.pull(rt, h)
        XCTAssertEqual(pulled.status, 200)
        XCTAssertEqual(pulled.json["access"]?["permission"]?.stringValue, "readOnly")
        let (_, stranger) = s.signup("stranger")
        XCTAssertEqual(s.push(stranger, h).status, 404)
    }

    /// A push whose answer is lost, replayed whole: every record answers unchanged and the
    /// feed holds each record once.
    func testReplayAfterLostResponse() throws {
        // A connection dropped before its answer is read: over a socket.
        let s = try TestServer(.live)
        defer { s.stop() }
        let (acct, t) = s.signup("mum")
        let h = s.household(t)
        let start = s.pullAll(t, h).token
        let kid = SyncRecords.newId()
        let txs = (0..<5).map { SyncRecords.transaction(SyncRecords.newId(), child: kid, amount: Int64($0 + 1)) }
        let child = SyncRecords.child(kid, name: "Ada", modifiedBy: acct)
        // Simulate the lost answer: send and drop the connection before reading the reply.
        let sent = expectation(description: "sent")
        var req = URLRequest(url: URL(string: s.base + "/v1/households/\(h)/changes")!)
        req.httpMethod = "POST"
        req.setValue("Bearer \(t)", forHTTPHeaderField: "Authorization")
        req.setValue("application/json", forHTTPHeaderField: "Content-Type")
        req.httpBody = Data(JSONValue.obj(["children": .array([child]), "transactions": .array(txs)]).serialized())
        let task = URLSession.shared.dataTask(with: req) { _, _, _ in sent.fulfill() }
        task.resume()
        Thread.sleep(forTimeInterval: 0.05)
        task.cancel()
        wait(for: [sent], timeout: 5)
        // Whether or not the first attempt committed, the retry converges.
        let retry = s.pushResults(t, h, children: [child], transactions: txs)
        XCTAssertEqual(retry.count, 6)
        XCTAssertTrue(retry.allSatisfy { ["saved", "unchanged"].contains($0["status"]?.stringValue) })
        let again = s.pushResults(t, h, children: [child], transactions: txs)
        XCTAssertEqual(again.map { $0["status"]?.stringValue }, Array(repeating: "unchanged", count: 6))
        let feed = s.pullAll(t, h, since: start)
        XCTAssertEqual(feed.children.count, 1)
        XCTAssertEqual(feed.transactions.count, 5)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(kid)", token: t).json["balanceCents"]?.intValue, 15)
    }
}
