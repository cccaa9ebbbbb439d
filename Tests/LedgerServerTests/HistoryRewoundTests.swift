import Foundation
import LedgerServerTesting
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStorageSQLite
import XCTest

/// The server knows it went back in time: positions of an earlier database incarnation (after
/// `rewound`, or `restore`) and positions ahead of the household are 410 `history_rewound`;
/// `POST …/reconcile` finds what a device holds that the server lacks. Both backends.
final class HistoryRewoundTests: XCTestCase {
    var s: TestServer!
    override func setUpWithError() throws { s = try TestServer() }
    override func tearDown() { s.stop() }

    private func token(after t: String, _ h: String) throws -> String {
        try XCTUnwrap(s.pull(t, h).json["nextToken"]?.stringValue)
    }

    func testRewoundMakesEveryEarlierPositionHistoryRewound() throws {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let kid = s.child(t, household: h)
        _ = s.pushResults(t, h, transactions: [5, 6].map { SyncRecords.transaction(SyncRecords.newId(), child: kid, amount: $0) })
        let before = try token(after: t, h)
        XCTAssertEqual(s.pull(t, h, since: before).status, 200)
        let status = try XCTUnwrap(s.call("GET", "/v1/households/\(h)/sync-status", token: t).json["latestToken"]?.stringValue)
        let cursor = try XCTUnwrap(s.call("GET", "/v1/households/\(h)/transactions?limit=1", token: t).json["nextCursor"]?.stringValue)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/transactions?limit=1&cursor=\(cursor)", token: t).status, 200)

        let answer = try JSONValue.parse(Array(try AdminCommands.rewound(s.app.configuration).utf8))
        XCTAssertEqual(answer["event"]?.stringValue, "rewound")

        for old in [before, status] {
            let r = s.pull(t, h, since: old)
            XCTAssertEqual(r.status, 410)
            XCTAssertEqual(r.code, "history_rewound")
            XCTAssertEqual(r.header("Content-Type"), "application/problem+json")
        }
        // Pulled afresh, the new position works, and names the new incarnation.
        let fresh = s.pull(t, h)
        XCTAssertEqual(fresh.json["transactions"]?.arrayValue?.count, 2)
        // A list cursor of the earlier incarnation too (once the server has seen the new one).
        let oldCursor = s.call("GET", "/v1/households/\(h)/transactions?limit=1&cursor=\(cursor)", token: t)
        XCTAssertEqual(oldCursor.status, 410)
        XCTAssertEqual(oldCursor.code, "history_rewound")
        let newCursor = try XCTUnwrap(s.call("GET", "/v1/households/\(h)/transactions?limit=1", token: t).json["nextCursor"]?.stringValue)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/transactions?limit=1&cursor=\(newCursor)", token: t).status, 200)
        let now = try XCTUnwrap(fresh.json["nextToken"]?.stringValue)
        XCTAssertEqual(s.pull(t, h, since: now).status, 200)
        XCTAssertNotEqual(SyncPosition(token: now)?.database, SyncPosition(token: before)?.database)
    }

    /// Automatic detection: a position ahead of the household (its sequence went back) is
    /// `history_rewound`, also in a token of the earlier format that named no database.
    func testPositionAheadOfTheHouseholdIsHistoryRewound() throws {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let kid = s.child(t, household: h)
        _ = s.pushResults(t, h, transactions: [SyncRecords.transaction(SyncRecords.newId(), child: kid, amount: 5)])
        let p = try XCTUnwrap(SyncPosition(token: try token(after: t, h)))
        XCTAssertNotNil(p.database)
        let ahead = SyncPosition(household: p.household, incarnation: p.incarnation, seq: p.seq + 3, database: p.database)
        XCTAssertEqual(s.pull(t, h, since: ahead.token).code, "history_rewound")
        let legacyAhead = SyncPosition(household: p.household, incarnation: p.incarnation, seq: p.seq + 1, database: nil)
        XCTAssertEqual(s.pull(t, h, since: legacyAhead.token).code, "history_rewound")
        // An earlier format's token that is still a position of the household goes on working.
        let legacy = SyncPosition(household: p.household, incarnation: p.incarnation, seq: p.seq, database: nil)
        XCTAssertEqual(s.pull(t, h, since: legacy.token).status, 200)
        // Another household's position, or a re-created household's, is still token_expired.
        let other = s.household(t, name: "Other")
        XCTAssertEqual(s.pull(t, other, since: p.token).code, "token_expired")
        let reborn = SyncPosition(household: p.household, incarnation: p.incarnation + 1, seq: 0, database: p.database)
        XCTAssertEqual(s.pull(t, h, since: reborn.token).code, "token_expired")
    }

    func testReconcileFindsWhatTheServerLacks() throws {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let kid = s.child(t, household: h)
        let held = (0..<3).map { _ in SyncRecords.newId() }
        _ = s.pushResults(t, h, transactions: held.map { SyncRecords.transaction($0, child: kid, amount: 1) })
        let lost = SyncRecords.newId(), ghost = SyncRecords.newId()
        var mine = ReconcileDigest.ChildSummary()
        for id in held + [lost] { mine.add(id: id) }

        func summary(_ s: ReconcileDigest.Summary) -> [String: JSONValue] {
            ["count": .int(Int64(s.count)), "digest": .string(s.digest)]
        }
        var children = summary(mine.whole)
        children["childId"] = .string(kid)
        var ghostChild = summary(ReconcileDigest.Summary())
        ghostChild["childId"] = .string(ghost)
        let first = s.call("POST", "/v1/households/\(h)/reconcile", token: t,
                           json: .obj(["children": .array([.object(JSONObject(uniquePairs: children.sorted { $0.key < $1.key })), .object(JSONObject(uniquePairs: ghostChild.sorted { $0.key < $1.key }))])]))
        XCTAssertEqual(first.status, 200)
        let answers = try XCTUnwrap(first.json["children"]?.arrayValue)
        XCTAssertEqual(answers[0]["match"]?.boolValue, false)
        XCTAssertEqual(answers[0]["known"]?.boolValue, true)
        XCTAssertEqual(answers[0]["count"]?.intValue, 3)
        XCTAssertEqual(answers[0]["child"]?["id"]?.stringValue, kid)
        XCTAssertEqual(answers[1]["known"]?.boolValue, false)
        XCTAssertEqual(answers[1]["child"], JSONValue.null)

        let buckets: [JSONValue] = mine.buckets.enumerated().filter { $0.element.count > 0 }.map { b in
            var o = summary(b.element)
            o["childId"] = .string(kid)
            o["bucket"] = .int(Int64(b.offset))
            return .object(JSONObject(uniquePairs: o.sorted { $0.key < $1.key }))
        }
        let second = s.call("POST", "/v1/households/\(h)/reconcile", token: t, json: .obj(["buckets": .array(buckets)]))
        let differing = try XCTUnwrap(second.json["buckets"]?.arrayValue).filter { $0["match"]?.boolValue == false }
        XCTAssertEqual(differing.compactMap { $0["bucket"]?.intValue }, [Int64(ReconcileDigest.bucket(ReconcileDigest.hash(lost)))])

        let third = s.call("POST", "/v1/households/\(h)/reconcile", token: t,
                           json: .obj(["ids": .array([.obj(["childId": .string(kid), "ids": .array((held + [lost]).map { .string($0.uppercased()) })])])]))
        XCTAssertEqual(third.json["missing"]?.arrayValue?.compactMap(\.stringValue), [lost])
    }

    /// Requests are compared by id: the answer names those the server lacks in this household.
    func testReconcileFindsTheRequestsTheServerLacks() throws {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let kid = s.child(t, household: h)
        let made = s.call("POST", "/v1/households/\(h)/children/\(kid)/requests", token: t, json: .obj(["kind": "spend", "amountCents": 5]))
        XCTAssertEqual(made.status, 201)
        let held = try XCTUnwrap(made.json["id"]?.stringValue)
        // Another household's request is lacking here too.
        let (_, other) = s.signup("eve")
        let g = s.household(other)
        let theirs = s.call("POST", "/v1/households/\(g)/children/\(s.child(other, household: g))/requests", token: other,
                            json: .obj(["kind": "spend", "amountCents": 5])).json["id"]?.stringValue ?? ""
        let lost = SyncRecords.newId()
        let r = s.call("POST", "/v1/households/\(h)/reconcile", token: t,
                       json: .obj(["requests": .array([.string(held.uppercased()), .string(lost), .string(theirs)])]))
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.json["missingRequests"]?.arrayValue?.compactMap(\.stringValue), [lost, theirs])
        XCTAssertEqual(r.json["missing"]?.arrayValue, [])
        let bad = s.call("POST", "/v1/households/\(h)/reconcile", token: t, json: .obj(["requests": .array(["nope", 5])]))
        XCTAssertEqual(bad.status, 422)
        XCTAssertNotNil(bad.json["fields"]?["requests[0]"])
        XCTAssertNotNil(bad.json["fields"]?["requests[1]"])
        let many = (0...ReconcileRoutes.maxIds).map { _ in JSONValue.string(SyncRecords.newId()) }
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/reconcile", token: t, json: .obj(["requests": .array(many)])).code,
                       "batch_too_large")
    }

    func testReconcileRefusesMalformedAndOversizedRequests() {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let kid = s.child(t, household: h)
        let bad = s.call("POST", "/v1/households/\(h)/reconcile", token: t,
                         json: .obj(["children": .array([.obj(["childId": .string(kid), "count": 1, "digest": "xyz"])]),
                                     "buckets": .array([.obj(["childId": .string(kid), "bucket": 256, "count": 0, "digest": "0000000000000000"])])]))
        XCTAssertEqual(bad.status, 422)
        XCTAssertEqual(bad.code, "validation_failed")
        let fields = bad.json["fields"]?.objectValue
        XCTAssertNotNil(fields?["children[0].digest"])
        XCTAssertNotNil(fields?["buckets[0].bucket"])
        let unknown = s.call("POST", "/v1/households/\(h)/reconcile", token: t, json: .obj(["extra": true]))
        XCTAssertEqual(unknown.status, 422)
        XCTAssertNotNil(unknown.json["fields"]?["extra"])
        let many = (0...ReconcileRoutes.maxIds).map { _ in JSONValue.string(SyncRecords.newId()) }
        let big = s.call("POST", "/v1/households/\(h)/reconcile", token: t,
                         json: .obj(["ids": .array([.obj(["childId": .string(kid), "ids": .array(many)])])]))
        XCTAssertEqual(big.status, 413)
        XCTAssertEqual(big.code, "batch_too_large")
    }

    /// `restore` (SQLite) refuses while a server serves the folder, refuses a file that is not
    /// a sound backup, and otherwise installs it with a new incarnation, keeping the database
    /// it replaced.
    func testRestoreCommand() throws {
        try TestServer.requireSQLite("restore installs SQLite backups (PostgreSQL: pg_restore, then rewound)")
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-restore-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var c = LedgerAppConfiguration(dataDirectory: folder + "/data", host: "127.0.0.1", port: 0)
        c.logging = false
        c.http.eventLoops = 1
        let app = try LedgerApp(configuration: c)
        try app.start()
        _ = try AdminCommands.createAccount(c, handle: "mum", name: "Mum", deviceName: "admin")
        let backup = folder + "/backup.sqlite"
        try AdminCommands.backup(c, to: backup)
        XCTAssertThrowsError(try AdminCommands.restore(c, from: backup)) { e in
            XCTAssertTrue("\(e)".contains("another kidledger-server"), "\(e)")
        }
        app.stop()
        let path = c.databasePath
        let before = try SQLiteMaintenance.incarnation(path: path)
        let garbage = folder + "/garbage.sqlite"
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: garbage))
        XCTAssertThrowsError(try AdminCommands.restore(c, from: garbage))
        XCTAssertThrowsError(try AdminCommands.restore(c, from: folder + "/absent.sqlite"))
        XCTAssertEqual(try SQLiteMaintenance.incarnation(path: path), before, "a refused restore changes nothing")

        let answer = try JSONValue.parse(Array(try AdminCommands.restore(c, from: backup).utf8))
        XCTAssertEqual(answer["event"]?.stringValue, "restore")
        let replaced = try XCTUnwrap(answer["replaced"]?.stringValue)
        XCTAssertTrue(FileManager.default.fileExists(atPath: replaced))
        XCTAssertEqual(try SQLiteMaintenance.incarnation(path: replaced), before)
        XCTAssertNotEqual(try SQLiteMaintenance.incarnation(path: path), before)
        XCTAssertTrue(try AdminCommands.check(c).ok)
        XCTAssertTrue(FileManager.default.fileExists(atPath: backup), "the backup itself is left as it was")
        // The server starts on the restored database.
        let again = try LedgerApp(configuration: c)
        try again.start()
        again.stop()
    }
}

/// Attribution stays unforgeable: a pushed record is the caller's, except the owner's restore
/// from their device (`ownerRestore`), which may name an account that is or was a member and
/// marks the record as restored by the owner. Both backends.
final class OwnerRestoreAttributionTests: XCTestCase {
    var s: TestServer!
    override func setUpWithError() throws { s = try TestServer() }
    override func tearDown() { s.stop() }

    private func push(_ token: String, _ h: String, _ tx: JSONValue, child: JSONValue? = nil, ownerRestore: Bool?) -> [JSONValue] {
        var body: [(String, JSONValue)] = [("transactions", .array([tx])), ("children", .array(child.map { [$0] } ?? []))]
        if let ownerRestore { body.append(("ownerRestore", .bool(ownerRestore))) }
        let r = s.call("POST", "/v1/households/\(h)/changes", token: token, json: .object(JSONObject(uniquePairs: body)))
        XCTAssertEqual(r.status, 200, "\(r.json)")
        return r.json["results"]?.arrayValue ?? []
    }

    private func tx(_ kid: String, author: String?) -> JSONValue {
        var o = SyncRecords.transaction(SyncRecords.newId(), child: kid, amount: 3).objectValue!
        if let author { o["authorAccountId"] = .string(author) }
        return .object(o)
    }

    func testOnlyTheOwnersRestoreMayNameAnotherAuthor() throws {
        let (mum, t) = s.signup("mum")
        let h = s.household(t)
        let kid = s.child(t, household: h)
        let dad = s.joinedParticipant(h, owner: t, handle: "dad")
        let (stranger, _) = s.signup("stranger")

        // A participant cannot write in the owner's name, restore or not.
        for flag in [nil, false, true] as [Bool?] {
            let r = push(dad.token, h, tx(kid, author: mum), ownerRestore: flag)
            XCTAssertEqual(r.first?["code"]?.stringValue, "attribution_mismatch", "\(flag as Any)")
        }
        // The owner cannot either without saying it restores, nor for an account never a member.
        XCTAssertEqual(push(t, h, tx(kid, author: dad.id), ownerRestore: nil).first?["code"]?.stringValue, "attribution_mismatch")
        XCTAssertEqual(push(t, h, tx(kid, author: stranger), ownerRestore: true).first?["code"]?.stringValue, "attribution_mismatch")
        // Naming oneself is no restore.
        let own = push(dad.token, h, tx(kid, author: dad.id), ownerRestore: nil).first
        XCTAssertEqual(own?["status"]?.stringValue, "saved")
        XCTAssertNil(own?["restoredBy"])
        let forged = SyncRecords.child(SyncRecords.newId(), name: "Cy", modifiedBy: mum)
        XCTAssertEqual(push(dad.token, h, tx(kid, author: nil), child: forged, ownerRestore: true).first?["code"]?.stringValue,
                       "modified_by_mismatch")
        XCTAssertEqual(try s.int("SELECT COUNT(*) FROM restored_records"), 0)

        // The owner's restore of a member who left: kept in the member's name, marked.
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/share/participants/\(dad.id)", token: dad.token).status, 204)
        let record = tx(kid, author: dad.id)
        let restored = push(t, h, record, ownerRestore: true).first
        XCTAssertEqual(restored?["status"]?.stringValue, "saved")
        XCTAssertEqual(restored?["restoredBy"]?.stringValue, mum)
        let id = try XCTUnwrap(record["id"]?.stringValue)
        let stored = s.call("GET", "/v1/households/\(h)/transactions/\(id)", token: t).json
        XCTAssertEqual(stored["authorAccountId"]?.stringValue ?? stored["transaction"]?["authorAccountId"]?.stringValue, dad.id)
        XCTAssertEqual(try s.int("SELECT COUNT(*) FROM restored_records WHERE kind = 'transaction'"), 1)
        // Pushed again: unchanged, not marked twice.
        XCTAssertEqual(push(t, h, record, ownerRestore: true).first?["status"]?.stringValue, "unchanged")
        XCTAssertEqual(try s.int("SELECT COUNT(*) FROM restored_records"), 1)

        // Children: a participant's child edit in the owner's restore is marked; the other way round refused.
        let bo = SyncRecords.newId()
        let child = SyncRecords.child(bo, name: "Bo", modifiedBy: dad.id)
        let saved = push(t, h, tx(kid, author: nil), child: child, ownerRestore: true)
        XCTAssertEqual(saved.first?["restoredBy"]?.stringValue, mum)
    }
}
