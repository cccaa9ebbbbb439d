import Foundation
import LedgerServerTesting
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import XCTest

/// Pots, goals and transfers over HTTP (both backends): the routes, If-Match, idempotent
/// retries, pots named by transactions, transfers written whole or not at all (also from
/// several writers at once), deletion, the feed and the sync push.
final class PotTests: XCTestCase {
    var clock: TestClock!
    var s: TestServer!
    var owner = "", ownerId = "", h = "", kid = ""

    override func setUpWithError() throws {
        clock = TestClock("2026-12-01T08:00:00Z")
        s = try TestServer.scheduled(clock)
        (ownerId, owner) = s.signup("mum")
        h = s.household(owner)
        kid = s.child(owner, household: h)
    }
    override func tearDown() { s.stop() }

    static func defaultPot(_ child: String) -> String {
        UUIDv5.make(namespace: LedgerIDs.namespace, name: "pot:" + child).lowercased
    }

    func addPot(_ name: String, child: String? = nil, id: String? = nil, extra: JSONObject = [:]) -> TestServer.Reply {
        var o: JSONObject = ["name": .string(name)]
        if let id { o["id"] = .string(id) }
        for (k, v) in extra.pairs { o[k] = v }
        return s.call("POST", "/v1/households/\(h)/children/\(child ?? kid)/pots", token: owner, json: .object(o))
    }

    func pots(child: String? = nil) -> [JSONValue] {
        let r = s.call("GET", "/v1/households/\(h)/children/\(child ?? kid)/pots", token: owner)
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        return r.json["items"]?.arrayValue ?? []
    }

    func balances() -> [String: Int64] {
        Dictionary(uniqueKeysWithValues: pots().map { ($0["id"]!.stringValue!, $0["balanceCents"]!.intValue!) })
    }

    func add(_ cents: Int64, pot: String? = nil, child: String? = nil) -> TestServer.Reply {
        var o: JSONObject = ["amountCents": .int(cents)]
        if let pot { o["potId"] = .string(pot) }
        return s.call("POST", "/v1/households/\(h)/children/\(child ?? kid)/transactions", token: owner, json: .object(o))
    }

    func transfer(_ id: String, from: String, to: String, _ cents: Int64, token: String? = nil) -> TestServer.Reply {
        Self.transfer(s, h, kid, token ?? owner, id, from: from, to: to, cents)
    }

    static func transfer(_ s: TestServer, _ h: String, _ kid: String, _ token: String, _ id: String, from: String, to: String,
                         _ cents: Int64) -> TestServer.Reply {
        s.call("POST", "/v1/households/\(h)/children/\(kid)/transfers", token: token,
               json: .obj(["id": .string(id), "fromPotId": .string(from), "toPotId": .string(to), "amountCents": .int(cents)]))
    }

    func testDefaultPotCreateListEditWithIfMatch() throws {
        let main = Self.defaultPot(kid)
        var list = pots()
        XCTAssertEqual(list.count, 1)
        XCTAssertEqual(list[0]["id"]?.stringValue, main)
        XCTAssertEqual(list[0]["name"]?.stringValue, "Main")
        XCTAssertEqual(list[0]["balanceCents"]?.intValue, 0)
        XCTAssertEqual(list[0]["changeTag"]?.stringValue, "v0")

        let id = SyncRecords.newId()
        let created = addPot("Save", id: id, extra: ["targetCents": 2000, "targetDate": "2027-06-01"])
        XCTAssertEqual(created.status, 201, String(decoding: created.body, as: UTF8.self))
        XCTAssertEqual(created.json["childId"]?.stringValue, kid)
        XCTAssertEqual(created.json["householdId"]?.stringValue, h)
        XCTAssertEqual(created.json["targetCents"]?.intValue, 2000)
        XCTAssertEqual(created.json["targetDate"]?.stringValue, "2027-06-01")
        XCTAssertEqual(created.json["progress"], .int(0))
        XCTAssertEqual(created.json["modifiedBy"]?.stringValue, ownerId)
        XCTAssertEqual(created.header("Location"), "/v1/households/\(h)/pots/\(id)")
        let tag = try XCTUnwrap(created.json["changeTag"]?.stringValue)
        XCTAssertEqual(created.header("ETag"), "\"\(tag)\"")
        // The same POST: 200, the same pot; another pot under the id: 409 with the current one.
        let again = addPot("Save", id: id, extra: ["targetCents": 2000, "targetDate": "2027-06-01"])
        XCTAssertEqual(again.status, 200)
        XCTAssertEqual(again.json["changeTag"]?.stringValue, tag)
        let other = addPot("Give", id: id)
        XCTAssertEqual(other.status, 409)
        XCTAssertEqual(other.code, "id_conflict")
        XCTAssertEqual(other.json["current"]?["name"]?.stringValue, "Save")
        // Another child's default pot id is that child's.
        let ben = s.child(owner, household: h, name: "Ben")
        XCTAssertEqual(addPot("Mine", id: Self.defaultPot(ben)).code, "id_conflict")
        // Bad input.
        XCTAssertEqual(addPot("", extra: [:]).status, 422)
        XCTAssertEqual(addPot("X", extra: ["targetCents": 0]).status, 422)
        XCTAssertEqual(addPot("X", extra: ["targetDate": "2027-02-30"]).status, 422)
        XCTAssertEqual(addPot("X", extra: ["balanceCents": 5]).status, 422)

        list = pots()
        XCTAssertEqual(list.map { $0["name"]!.stringValue! }, ["Main", "Save"])

        // PATCH with If-Match: a stale tag 412, the current one renames; the default pot's tag is v0.
        let stale = s.call("PATCH", "/v1/households/\(h)/pots/\(id)", token: owner, json: .obj(["name": "Savings"]),
                           headers: ["If-Match": "\"v1\""])
        XCTAssertEqual(stale.status, 412)
        let renamed = s.call("PATCH", "/v1/households/\(h)/pots/\(id)", token: owner,
                             json: .obj(["name": "Savings", "targetCents": .null]), headers: ["If-Match": "\"\(tag)\""])
        XCTAssertEqual(renamed.status, 200)
        XCTAssertEqual(renamed.json["name"]?.stringValue, "Savings")
        XCTAssertEqual(renamed.json["targetCents"], .null)
        XCTAssertEqual(renamed.json["progress"], .null)
        XCTAssertNotEqual(renamed.json["changeTag"]?.stringValue, tag)
        let spend = s.call("PATCH", "/v1/households/\(h)/pots/\(main)", token: owner, json: .obj(["name": "Spend"]),
                           headers: ["If-Match": "\"v0\""])
        XCTAssertEqual(spend.status, 200, String(decoding: spend.body, as: UTF8.self))
        XCTAssertEqual(pots().map { $0["name"]!.stringValue! }, ["Spend", "Savings"])
        XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)/pots/\(main)", token: owner, json: .obj(["name": "Again"]),
                              headers: ["If-Match": "\"v0\""]).status, 412)
        // Unknown pots and another household's pot: 404.
        XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)/pots/\(SyncRecords.newId())", token: owner,
                              json: .obj(["name": "X"])).status, 404)
        let (_, stranger) = s.signup("stranger")
        let theirs = s.household(stranger)
        XCTAssertEqual(s.call("PATCH", "/v1/households/\(theirs)/pots/\(id)", token: stranger, json: .obj(["name": "X"])).status, 404)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/children/\(kid)/pots", token: stranger).status, 404)
    }

    /// A child holds at most `maxPotsPerChild` pots besides its default pot; deleted ones do not count.
    func testPotQuota() throws {
        let s = try TestServer { c in c.maxPotsPerChild = 2 }
        defer { s.stop() }
        let (ownerId, owner) = s.signup("dad")
        let h = s.household(owner), kid = s.child(owner, household: h)
        func add(_ name: String) -> TestServer.Reply {
            s.call("POST", "/v1/households/\(h)/children/\(kid)/pots", token: owner, json: .obj(["name": .string(name)]))
        }
        // Naming the default pot gives it a row, which does not count.
        XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)/pots/\(Self.defaultPot(kid))", token: owner, json: .obj(["name": "Spend"])).status, 200)
        let first = add("A").json["id"]!.stringValue!
        XCTAssertEqual(add("B").status, 201)
        let over = add("C")
        XCTAssertEqual(over.status, 409)
        XCTAssertEqual(over.code, "too_many_pots")
        XCTAssertEqual(over.json["limit"]?.intValue, 2)
        let pushed = s.call("POST", "/v1/households/\(h)/changes", token: owner, json: .obj(["pots": .array([.obj([
            "id": .string(SyncRecords.newId()), "childId": .string(kid), "name": "D", "archived": false,
            "createdAt": "2026-12-01T07:00:00Z", "modifiedAt": "2026-12-01T07:00:00Z", "modifiedBy": .string(ownerId)])])]))
        XCTAssertEqual(pushed.json["results"]?.arrayValue?.first?["code"]?.stringValue, "too_many_pots")
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/pots/\(first)", token: owner).status, 204)
        XCTAssertEqual(add("C").status, 201)
    }

    /// Lists are paged like the others: the default pot first, at most `limit` a page.
    func testPotListsArePaged() throws {
        let names = ["A", "B", "C"]
        for n in names {
            clock.set(Timestamp.format(ms: clock.now() + 1_000))
            XCTAssertEqual(addPot(n).status, 201)
        }
        for limit in 1...4 {
            var seen: [String] = [], cursor: String?
            repeat {
                let r = s.call("GET", "/v1/households/\(h)/children/\(kid)/pots?limit=\(limit)" + (cursor.map { "&cursor=\($0)" } ?? ""),
                               token: owner)
                XCTAssertEqual(r.status, 200)
                let items = r.json["items"]!.arrayValue!
                XCTAssertLessThanOrEqual(items.count, limit)
                seen += items.map { $0["name"]!.stringValue! }
                cursor = r.json["nextCursor"]?.stringValue
            } while cursor != nil && seen.count < 10
            XCTAssertEqual(seen, ["Main"] + names, "limit \(limit)")
        }
    }

    func testTransactionsNameTheirPotAndBalancesAreSums() throws {
        let save = addPot("Save", extra: ["targetCents": 1000]).json["id"]!.stringValue!
        XCTAssertEqual(add(500).status, 201)
        let saved = add(300, pot: save)
        XCTAssertEqual(saved.status, 201)
        XCTAssertEqual(saved.json["transaction"]?["potId"]?.stringValue, save)
        XCTAssertEqual(saved.json["balanceCents"]?.intValue, 800)
        // The default pot by its id is the default pot.
        let explicit = add(-100, pot: Self.defaultPot(kid))
        XCTAssertEqual(explicit.json["transaction"]?["potId"]?.stringValue, Self.defaultPot(kid))
        XCTAssertEqual(balances(), [Self.defaultPot(kid): 400, save: 300])
        XCTAssertEqual(pots()[1]["progress"], .number("0.3"))
        XCTAssertEqual(s.balance(owner, h, kid), 700)
        // Every transaction names its pot in lists and in the feed.
        let listed = s.transactions(owner, h, kid)
        XCTAssertEqual(Set(listed.map { $0["potId"]!.stringValue! }), [Self.defaultPot(kid), save])
        let feed = s.pull(owner, h).json
        XCTAssertEqual(feed["transactions"]?.arrayValue?.compactMap { $0["potId"]?.stringValue }.count, 3)
        XCTAssertEqual(feed["pots"]?.arrayValue?.map { $0["id"]!.stringValue! }, [save])
        XCTAssertEqual(feed["pots"]?.arrayValue?.first?["balanceCents"]?.intValue, 300)

        // Unknown pots, another child's pot, another household's pot: 422, nothing written.
        let ben = s.child(owner, household: h, name: "Ben")
        let bens = addPot("Ben's", child: ben).json["id"]!.stringValue!
        XCTAssertEqual(add(1, pot: SyncRecords.newId()).code, "unknown_pot")
        XCTAssertEqual(add(1, pot: bens).code, "pot_of_another_child")
        XCTAssertEqual(add(1, pot: Self.defaultPot(ben)).code, "pot_of_another_child")
        let (_, stranger) = s.signup("stranger")
        let theirs = s.household(stranger)
        let theirKid = s.child(stranger, household: theirs)
        let theirPot = s.call("POST", "/v1/households/\(theirs)/children/\(theirKid)/pots", token: stranger,
                              json: .obj(["name": "Theirs"])).json["id"]!.stringValue!
        XCTAssertEqual(add(1, pot: theirPot).code, "unknown_pot")
        XCTAssertEqual(add(1, pot: "not-a-uuid").status, 422)
        XCTAssertEqual(s.balance(owner, h, kid), 700)

        // An undo takes the money back from its pot.
        let undo = s.call("POST", "/v1/households/\(h)/children/\(kid)/undo-last", token: owner, json: .obj([:]))
        XCTAssertEqual(undo.status, 201, String(decoding: undo.body, as: UTF8.self))
        XCTAssertEqual(balances(), [Self.defaultPot(kid): 500, save: 300])
        let r = s.call("POST", "/v1/households/\(h)/transactions/\(saved.json["transaction"]!["id"]!.stringValue!)/reversal", token: owner,
                       json: .obj([:]))
        XCTAssertEqual(r.json["transaction"]?["potId"]?.stringValue, save)
        XCTAssertEqual(balances(), [Self.defaultPot(kid): 500, save: 0])
    }

    func testTransferWritesBothHalvesOnceAndNeverHalf() throws {
        let main = Self.defaultPot(kid)
        let save = addPot("Save").json["id"]!.stringValue!
        XCTAssertEqual(add(1000).status, 201)
        let id = SyncRecords.newId()
        let moved = transfer(id, from: main, to: save, 300)
        XCTAssertEqual(moved.status, 201, String(decoding: moved.body, as: UTF8.self))
        let outId = UUIDv5.make(namespace: LedgerIDs.namespace, name: "transfer-out:" + id).lowercased
        let inId = UUIDv5.make(namespace: LedgerIDs.namespace, name: "transfer-in:" + id).lowercased
        XCTAssertEqual(moved.json["out"]?["id"]?.stringValue, outId)
        XCTAssertEqual(moved.json["in"]?["id"]?.stringValue, inId)
        XCTAssertEqual(moved.json["out"]?["amountCents"]?.intValue, -300)
        XCTAssertEqual(moved.json["out"]?["potId"]?.stringValue, main)
        XCTAssertEqual(moved.json["in"]?["potId"]?.stringValue, save)
        XCTAssertEqual(moved.json["balanceCents"]?.intValue, 1000)
        XCTAssertEqual(balances(), [main: 700, save: 300])
        // A retry: 200, the same two, nothing more.
        let retry = transfer(id, from: main, to: save, 300)
        XCTAssertEqual(retry.status, 200)
        XCTAssertEqual(retry.json["out"], moved.json["out"])
        XCTAssertEqual(retry.json["in"], moved.json["in"])
        XCTAssertEqual(s.transactions(owner, h, kid).count, 3)
        // Another transfer under the id: 409; bad input 422; nothing written by any of them.
        XCTAssertEqual(transfer(id, from: main, to: save, 301).code, "id_conflict")
        XCTAssertEqual(transfer(SyncRecords.newId(), from: main, to: main, 1).status, 422)
        XCTAssertEqual(transfer(SyncRecords.newId(), from: main, to: save, 0).status, 422)
        XCTAssertEqual(transfer(SyncRecords.newId(), from: main, to: SyncRecords.newId(), 5).code, "unknown_pot")
        let ben = s.child(owner, household: h, name: "Ben")
        XCTAssertEqual(transfer(SyncRecords.newId(), from: main, to: Self.defaultPot(ben), 5).code, "pot_of_another_child")
        // The second half refused after the first was written: neither stays (one write).
        let outOnly = SyncRecords.newId()
        let clash = UUIDv5.make(namespace: LedgerIDs.namespace, name: "transfer-in:" + outOnly).lowercased
        let pushed = s.pushResults(owner, h, transactions: [SyncRecords.transaction(clash, child: kid, amount: 7)])
        XCTAssertEqual(pushed.first?["status"]?.stringValue, "saved")
        XCTAssertEqual(transfer(outOnly, from: main, to: save, 50).code, "id_conflict")
        XCTAssertNil(s.transactions(owner, h, kid).first {
            $0["id"]?.stringValue == UUIDv5.make(namespace: LedgerIDs.namespace, name: "transfer-out:" + outOnly).lowercased
        })
        XCTAssertEqual(balances(), [main: 707, save: 300])
        // A reader may not move money.
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(kid)/transfers",
                              json: .obj(["id": .string(SyncRecords.newId())])).status, 401)
    }

    func testConcurrentTransfersFromSeveralWritersKeepBalancesSums() throws {
        let main = Self.defaultPot(kid)
        let ids = [main] + (0..<3).map { addPot("Pot \($0)").json["id"]!.stringValue! }
        XCTAssertEqual(add(10_000).status, 201)
        let writers = 4, each = 25
        let statuses = Mutex2<[Int]>([])
        let (s, h, kid, owner) = (self.s!, self.h, self.kid, self.owner)
        // Two parents' phones and two processes' worth of writers, each on its own thread.
        DispatchQueue.concurrentPerform(iterations: writers) { _ in
            var g = SystemRandomNumberGenerator()
            for _ in 0..<each {
                let from = ids.randomElement(using: &g)!
                let to = ids.filter { $0 != from }.randomElement(using: &g)!
                let id = SyncRecords.newId()
                let first = Self.transfer(s, h, kid, owner, id, from: from, to: to, Int64.random(in: 1...500, using: &g))
                let retry = Self.transfer(s, h, kid, owner, id, from: from, to: to, first.json["in"]?["amountCents"]?.intValue ?? 1)
                statuses.append([first.status, retry.status])
            }
        }
        let all = statuses.value
        XCTAssertEqual(all.count, writers * each * 2)
        XCTAssertEqual(all.filter { $0 == 201 }.count, writers * each)
        XCTAssertEqual(all.filter { $0 == 200 }.count, writers * each)
        let b = balances()
        XCTAssertEqual(b.values.reduce(0, +), 10_000)
        XCTAssertEqual(s.balance(owner, h, kid), 10_000)
        let txs = s.transactions(owner, h, kid)
        XCTAssertEqual(txs.count, 1 + 2 * writers * each)
        for pot in ids {
            XCTAssertEqual(txs.filter { $0["potId"]?.stringValue == pot }.reduce(0) { $0 + $1["amountCents"]!.intValue! }, b[pot])
        }
    }

    func testDeletingAPot() throws {
        let save = addPot("Save").json["id"]!.stringValue!
        XCTAssertEqual(add(100, pot: save).status, 201)
        let full = s.call("DELETE", "/v1/households/\(h)/pots/\(save)", token: owner)
        XCTAssertEqual(full.status, 409)
        XCTAssertEqual(full.code, "pot_not_empty")
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/pots/\(Self.defaultPot(kid))", token: owner).code, "default_pot")
        XCTAssertEqual(transfer(SyncRecords.newId(), from: save, to: Self.defaultPot(kid), 100).status, 201)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/pots/\(save)", token: owner, headers: ["If-Match": "\"v1\""]).status, 412)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/pots/\(save)", token: owner).status, 204)
        XCTAssertEqual(pots().count, 1)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/pots/\(save)", token: owner).status, 404)
        XCTAssertEqual(add(1, pot: save).code, "unknown_pot")
        XCTAssertEqual(addPot("Save", id: save).code, "id_conflict")
        let tomb = s.pull(owner, h).json["pots"]?.arrayValue?.first
        XCTAssertEqual(tomb?["deleted"]?.boolValue, true)
        XCTAssertEqual(tomb?["archived"]?.boolValue, true)
        XCTAssertEqual(s.balance(owner, h, kid), 100)
    }

    func testSyncPushOfPotsAndTransfers() throws {
        let potId = SyncRecords.newId(), transferId = UUID()
        let pot: JSONValue = .obj(["id": .string(potId), "childId": .string(kid), "name": "Save", "targetCents": 500,
                                   "targetDate": .null, "archived": false, "createdAt": "2026-12-01T07:00:00Z",
                                   "modifiedAt": "2026-12-01T07:00:00Z", "modifiedBy": .string(ownerId)])
        let main = Self.defaultPot(kid)
        let renamedMain: JSONValue = .obj(["id": .string(main), "childId": .string(kid), "name": "Spend", "archived": false,
                                          "createdAt": "2026-12-01T07:00:00Z", "modifiedAt": "2026-12-01T07:00:00Z",
                                          "modifiedBy": .string(ownerId)])
        func tx(_ id: String, _ amount: Int64, pot: String?) -> JSONValue {
            guard case .object(var o) = SyncRecords.transaction(id, child: kid, amount: amount,
                                                                createdAt: Timestamp.parse("2026-12-01T07:30:00Z")!) else { fatalError() }
            if let pot { o["potId"] = .string(pot) }
            return .object(o)
        }
        let outId = ScheduleIDs.transferOut(id: transferId).lowercased, inId = ScheduleIDs.transferIn(id: transferId).lowercased
        let deposit = SyncRecords.newId()
        let body: JSONValue = .obj(["children": .array([]), "pots": .array([pot, renamedMain]),
                                    "transactions": .array([tx(deposit, 1000, pot: nil), tx(outId, -400, pot: nil),
                                                            tx(inId, 400, pot: potId)])])
        let r = s.call("POST", "/v1/households/\(h)/changes", token: owner, json: body)
        XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
        let results = r.json["results"]!.arrayValue!
        XCTAssertEqual(results.map { $0["type"]!.stringValue! }, ["pot", "pot", "transaction", "transaction", "transaction"])
        XCTAssertEqual(results.map { $0["status"]!.stringValue! }, Array(repeating: "saved", count: 5))
        let tag = try XCTUnwrap(results[0]["changeTag"]?.stringValue)
        XCTAssertEqual(balances(), [main: 600, potId: 400])
        XCTAssertEqual(pots().map { $0["name"]!.stringValue! }, ["Spend", "Save"])
        // The same push again: unchanged.
        let again = s.call("POST", "/v1/households/\(h)/changes", token: owner, json: body).json["results"]!.arrayValue!
        XCTAssertEqual(again.map { $0["status"]!.stringValue! }, Array(repeating: "unchanged", count: 5))
        // An edit on a stale base: conflict with the server's pot; on the current base: saved.
        guard case .object(var edit) = pot else { return }
        edit["name"] = "Savings"
        edit["modifiedAt"] = "2026-12-01T07:45:00Z"
        edit["baseChangeTag"] = "v1"
        var res = s.call("POST", "/v1/households/\(h)/changes", token: owner, json: .obj(["pots": .array([.object(edit)])])).json["results"]!.arrayValue!
        XCTAssertEqual(res[0]["status"]?.stringValue, "conflict")
        XCTAssertEqual(res[0]["serverRecord"]?["name"]?.stringValue, "Save")
        edit["baseChangeTag"] = .string(tag)
        res = s.call("POST", "/v1/households/\(h)/changes", token: owner, json: .obj(["pots": .array([.object(edit)])])).json["results"]!.arrayValue!
        XCTAssertEqual(res[0]["status"]?.stringValue, "saved")
        // Another member's name, a pot of an unknown child, a transaction into an unknown pot.
        edit["modifiedBy"] = .string(SyncRecords.newId())
        res = s.call("POST", "/v1/households/\(h)/changes", token: owner, json: .obj(["pots": .array([.object(edit)])])).json["results"]!.arrayValue!
        XCTAssertEqual(res[0]["code"]?.stringValue, "modified_by_mismatch")
        var orphan = edit
        orphan["id"] = .string(SyncRecords.newId()); orphan["childId"] = .string(SyncRecords.newId()); orphan["modifiedBy"] = .string(ownerId)
        res = s.call("POST", "/v1/households/\(h)/changes", token: owner, json: .obj(["pots": .array([.object(orphan)])])).json["results"]!.arrayValue!
        XCTAssertEqual(res[0]["code"]?.stringValue, "unknown_child")
        res = s.call("POST", "/v1/households/\(h)/changes", token: owner,
                     json: .obj(["transactions": .array([tx(SyncRecords.newId(), 5, pot: SyncRecords.newId())])])).json["results"]!.arrayValue!
        XCTAssertEqual(res[0]["status"]?.stringValue, "rejected")
        XCTAssertEqual(res[0]["code"]?.stringValue, "unknown_pot")
        // The feed carries the pots and each transaction's pot.
        let feed = s.pull(owner, h).json
        XCTAssertEqual(Set(feed["pots"]!.arrayValue!.map { $0["id"]!.stringValue! }), [potId, main])
        XCTAssertEqual(feed["transactions"]!.arrayValue!.first { $0["id"]?.stringValue == inId }?["potId"]?.stringValue, potId)
    }

    /// A split schedule: the job pays one transaction per part that is not zero, in whole
    /// cents with the remainder to the first pot; the first part keeps the payment's id.
    func testSplitScheduleIsPaidAcrossPots() throws {
        let main = Self.defaultPot(kid)
        let save = addPot("Save").json["id"]!.stringValue!, give = addPot("Give").json["id"]!.stringValue!
        func split(_ parts: [(String, Int64)]) -> JSONValue {
            .array(parts.map { .obj(["potId": .string($0.0), "percent": .int($0.1)]) })
        }
        // Bad splits: percents not adding up to 100, a pot twice, an unknown pot, another child's pot.
        let ben = s.child(owner, household: h, name: "Ben")
        for (bad, code) in [(split([(main, 50), (save, 40)]), "validation_failed"), (split([(main, 50), (main, 50)]), "validation_failed"),
                            (split([(main, 0), (save, 100)]), "validation_failed"), (.obj(["potId": .string(main)]), "validation_failed"),
                            (split([(main, 50), (SyncRecords.newId(), 50)]), "unknown_pot"),
                            (split([(main, 50), (Self.defaultPot(ben), 50)]), "pot_of_another_child")] {
            let r = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(10, "weekly", from: "2026-12-04", zone: "UTC",
                                                                           extra: ["split": bad]))
            XCTAssertEqual(r.status, 422, "\(bad)")
            XCTAssertEqual(r.code, code, "\(bad)")
        }
        let r = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(10, "weekly", from: "2026-12-04", zone: "UTC",
                                                                       extra: ["split": split([(save, 33), (give, 33), (main, 34)])]))
        XCTAssertEqual(r.status, 201, String(decoding: r.body, as: UTF8.self))
        XCTAssertEqual(r.json["split"], split([(save, 33), (give, 33), (main, 34)]))
        let id = r.json["id"]!.stringValue!
        clock.set("2026-12-04T00:00:00Z")
        XCTAssertEqual(s.payDue().payments, 1)
        // 0.10 split 33/33/34 is 0.04 (the first pot, with the remainder), 0.03 and 0.03.
        XCTAssertEqual(balances(), [main: 3, save: 4, give: 3])
        let paid = s.transactions(owner, h, kid)
        let first = ScheduleFixtures.paymentId("allowance", id, "2026-12-04")
        XCTAssertEqual(paid.first { $0["id"]?.stringValue == first }?["potId"]?.stringValue, save)
        for pot in [give, main] {
            let other = UUIDv5.make(namespace: LedgerIDs.namespace, name: "allowance:\(id):2026-12-04:\(pot)").lowercased
            XCTAssertEqual(paid.first { $0["id"]?.stringValue == other }?["potId"]?.stringValue, pot)
        }
        XCTAssertEqual(s.balance(owner, h, kid), 10)
        // A part of zero writes nothing; a pot deleted since takes its part in the default pot.
        let tag = s.call("GET", "/v1/households/\(h)/schedules/\(id)", token: owner).json["changeTag"]!.stringValue!
        let edited = s.call("PATCH", "/v1/households/\(h)/schedules/\(id)", token: owner,
                            json: .obj(["split": split([(save, 99), (give, 1)])]), headers: ["If-Match": "\"\(tag)\""])
        XCTAssertEqual(edited.status, 200, String(decoding: edited.body, as: UTF8.self))
        XCTAssertEqual(transfer(SyncRecords.newId(), from: give, to: main, 3).status, 201)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/pots/\(give)", token: owner).status, 204)
        clock.set("2026-12-11T00:00:00Z")
        XCTAssertEqual(s.payDue().payments, 1)
        XCTAssertEqual(balances(), [main: 6, save: 4 + 10])
        XCTAssertEqual(s.transactions(owner, h, kid).count, 3 + 2 + 1)
        // null removes the split.
        let tag2 = s.call("GET", "/v1/households/\(h)/schedules/\(id)", token: owner).json["changeTag"]!.stringValue!
        XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)/schedules/\(id)", token: owner, json: .obj(["split": .null]),
                              headers: ["If-Match": "\"\(tag2)\""]).json["split"], .null)
    }

    /// `check` reads every pot and every transaction's pot: balances are sums of pots.
    func testCheckCoversPots() throws {
        let save = addPot("Save").json["id"]!.stringValue!, give = addPot("Give").json["id"]!.stringValue!
        XCTAssertEqual(add(500, pot: save).status, 201)
        XCTAssertEqual(transfer(SyncRecords.newId(), from: save, to: Self.defaultPot(kid), 200).status, 201)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/pots/\(give)", token: owner).status, 204)
        XCTAssertEqual(try s.check().problems, [])
        // A transaction moved to a pot of nobody, and a deleted pot that holds money.
        let tx = s.transactions(owner, h, kid).first { $0["amountCents"]?.intValue == 500 }!["id"]!.stringValue!
        let nowhere = SyncRecords.newId()
        try s.execute("UPDATE transactions SET pot_id = ? WHERE id = ?", [.text(nowhere), .text(tx)],
                      postgres: "UPDATE transactions SET pot_id = $1::uuid WHERE id = $2::uuid")
        XCTAssertEqual(try s.check().problems, ["pot: transaction \(tx) names pot \(nowhere), which is not a pot of its child \(kid)"])
        try s.execute("UPDATE transactions SET pot_id = ? WHERE id = ?", [.text(give), .text(tx)],
                      postgres: "UPDATE transactions SET pot_id = $1::uuid WHERE id = $2::uuid")
        XCTAssertEqual(try s.check().problems, ["pot: \(give) is deleted but holds 500"])
    }

    /// The owner's restore may push a pot in another member's name (marked as restored).
    func testOwnerRestorePushesAMembersPot() throws {
        let (dadId, dad) = s.signup("dad")
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/share", token: owner).status, 201)
        let invitation = s.call("POST", "/v1/households/\(h)/share/participants", token: owner,
                                json: .obj(["handle": "dad", "permission": "readWrite"])).json["invitationId"]!.stringValue!
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(invitation)/accept", token: dad).status, 200)
        let pot: JSONValue = .obj(["id": .string(SyncRecords.newId()), "childId": .string(kid), "name": "Dad's", "archived": false,
                                   "createdAt": "2026-12-01T07:00:00Z", "modifiedAt": "2026-12-01T07:00:00Z",
                                   "modifiedBy": .string(dadId)])
        let plain = s.call("POST", "/v1/households/\(h)/changes", token: owner, json: .obj(["pots": .array([pot])]))
        XCTAssertEqual(plain.json["results"]?.arrayValue?.first?["code"]?.stringValue, "modified_by_mismatch")
        let restored = s.call("POST", "/v1/households/\(h)/changes", token: owner,
                              json: .obj(["pots": .array([pot]), "ownerRestore": true])).json["results"]?.arrayValue?.first
        XCTAssertEqual(restored?["status"]?.stringValue, "saved")
        XCTAssertEqual(restored?["restoredBy"]?.stringValue, ownerId)
        XCTAssertEqual(pots().first { $0["name"]?.stringValue == "Dad's" }?["modifiedBy"]?.stringValue, dadId)
    }

    /// A device undoes an interest payment: the reversal repeats the payment's source.
    func testPushedUndoOfAnInterestPayment() throws {
        clock.set("2026-11-30T12:00:00Z")
        XCTAssertEqual(add(10_000).status, 201)
        let sched = s.addSchedule(owner, h, kid, .obj(["kind": "interest", "rateBasisPoints": 100, "cadence": "monthly",
                                                       "firstDate": "2026-12-01", "timeZone": "UTC"])).json["id"]!.stringValue!
        clock.set("2026-12-01T00:00:00Z")
        XCTAssertEqual(s.payDue().payments, 1)
        let paid = ScheduleFixtures.paymentId("interest", sched, "2026-12-01")
        let undo: JSONValue = .obj(["id": .string(SyncRecords.reversalId(of: paid)), "childId": .string(kid), "amountCents": -100,
                                    "note": "", "source": "interest", "createdAt": "2026-12-01T00:00:00Z",
                                    "reversesId": .string(paid)])
        let r = s.call("POST", "/v1/households/\(h)/changes", token: owner, json: .obj(["transactions": .array([undo])]))
        XCTAssertEqual(r.json["results"]?.arrayValue?[0]["status"]?.stringValue, "saved", String(decoding: r.body, as: UTF8.self))
        XCTAssertEqual(s.balance(owner, h, kid), 10_000)
        // Interest that is not a reversal is still refused.
        guard case .object(var forged) = undo else { return }
        forged["id"] = .string(SyncRecords.newId()); forged["reversesId"] = nil; forged["amountCents"] = 100
        let refused = s.call("POST", "/v1/households/\(h)/changes", token: owner, json: .obj(["transactions": .array([.object(forged)])]))
        XCTAssertEqual(refused.json["results"]?.arrayValue?[0]["code"]?.stringValue, "validation_failed")
    }
}

/// A value several threads append to.
final class Mutex2<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ v: Value) { stored = v }
    var value: Value { lock.lock(); defer { lock.unlock() }; return stored }
    func append<E>(_ items: [E]) where Value == [E] { lock.lock(); stored += items; lock.unlock() }
}
