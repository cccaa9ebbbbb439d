import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
import XCTest

/// The change feed: snapshots, paging, tokens, concurrent commits, sync status.
final class SyncFeedTests: XCTestCase {
    var s: TestServer!
    override func setUpWithError() throws { s = try TestServer() }
    override func tearDown() { s.stop() }

    func testSnapshotThenIncremental() {
        let (acct, t) = s.signup("mum")
        let h = s.household(t)
        let a = s.child(t, household: h, name: "Ada"), b = s.child(t, household: h, name: "Bo")
        let first = s.pull(t, h)
        XCTAssertEqual(first.status, 200)
        XCTAssertEqual(first.json["children"]?.arrayValue?.compactMap { $0["id"]?.stringValue }, [a, b])
        XCTAssertEqual(first.json["transactions"]?.arrayValue?.count, 0)
        XCTAssertEqual(first.json["household"]?["id"]?.stringValue, h)
        XCTAssertEqual(first.json["household"]?["ownerAccountId"]?.stringValue, acct)
        XCTAssertEqual(first.json["access"]?["role"]?.stringValue, "owner")
        XCTAssertEqual(first.json["access"]?["permission"]?.stringValue, "readWrite")
        XCTAssertEqual(first.json["moreComing"]?.boolValue, false)
        let token = first.json["nextToken"]!.stringValue!

        let again = s.pull(t, h, since: token)
        XCTAssertEqual(again.json["children"]?.arrayValue?.count, 0)
        XCTAssertEqual(again.json["nextToken"]?.stringValue, token)

        s.call("POST", "/v1/households/\(h)/children/\(b)/transactions", token: t, json: .obj(["amountCents": 250]))
        let next = s.pull(t, h, since: token)
        XCTAssertEqual(next.json["transactions"]?.arrayValue?.count, 1)
        XCTAssertEqual(next.json["transactions"]?.arrayValue?.first?["amountCents"]?.intValue, 250)
        XCTAssertNotEqual(next.json["nextToken"]?.stringValue, token)
    }

    /// Pages of 10 over 25 records while writes land between pages: every record arrives,
    /// a record changed after it was delivered arrives again in its latest state.
    func testPagingAcrossInterleavedWrites() {
        let (acct, t) = s.signup("mum")
        let h = s.household(t)
        let kid = s.child(t, household: h)
        var written: [String] = []
        for i in 0..<24 {
            let id = SyncRecords.newId()
            written.append(id)
            XCTAssertEqual(s.pushResults(t, h, transactions: [SyncRecords.transaction(id, child: kid, amount: Int64(i + 1))]).first?["status"]?.stringValue, "saved")
        }
        var seenTx: [String] = [], childNames: [String] = []
        var token: String?
        var pages = 0
        while true {
            let r = s.pull(t, h, since: token, limit: 10)
            XCTAssertEqual(r.status, 200)
            let kids = r.json["children"]!.arrayValue!, txs = r.json["transactions"]!.arrayValue!
            XCTAssertLessThanOrEqual(kids.count + txs.count, 10)
            childNames += kids.compactMap { $0["name"]?.stringValue }
            seenTx += txs.compactMap { $0["id"]?.stringValue }
            token = r.json["nextToken"]!.stringValue!
            pages += 1
            if pages == 1 {
                // Between pages: a new transaction, and a rename of the already delivered child.
                let id = SyncRecords.newId()
                written.append(id)
                _ = s.pushResults(t, h, transactions: [SyncRecords.transaction(id, child: kid, amount: 99)])
                XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)/children/\(kid)", token: t, json: .obj(["name": "Renamed"])).status, 200)
            }
            if r.json["moreComing"]?.boolValue != true { break }
            XCTAssertLessThan(pages, 10)
        }
        XCTAssertEqual(seenTx, written, "every transaction once, in commit order")
        XCTAssertEqual(childNames, ["Ada", "Renamed"])
        XCTAssertEqual(pages, 3)
        _ = acct
        let tail = s.pull(t, h, since: token)
        XCTAssertEqual(tail.json["transactions"]?.arrayValue?.count, 0)
        XCTAssertEqual(tail.json["children"]?.arrayValue?.count, 0)
    }

    /// A reversal stamps two records with one seq; a page never splits them.
    func testReversalPagesWithinTheLimit() {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let kid = s.child(t, household: h)
        let first = s.pullAll(t, h)
        let tx = SyncRecords.newId()
        _ = s.pushResults(t, h, transactions: [SyncRecords.transaction(tx, child: kid, amount: 500)])
        let mid = s.pullAll(t, h, since: first.token)
        XCTAssertEqual(mid.transactions.count, 1)
        _ = s.pushResults(t, h, transactions: [SyncRecords.transaction(SyncRecords.reversalId(of: tx), child: kid, amount: -500, reverses: tx)])
        // The target's new state comes first, then the reversal: one record per page at limit 1.
        let p1 = s.pull(t, h, since: mid.token, limit: 1)
        XCTAssertEqual(p1.json["transactions"]?.arrayValue?.count, 1)
        XCTAssertEqual(p1.json["moreComing"]?.boolValue, true)
        let original = p1.json["transactions"]!.arrayValue![0]
        XCTAssertEqual(original["id"]?.stringValue, tx)
        XCTAssertEqual(original["reversedById"]?.stringValue, SyncRecords.reversalId(of: tx))
        let p2 = s.pull(t, h, since: p1.json["nextToken"]!.stringValue!, limit: 1)
        XCTAssertEqual(p2.json["transactions"]?.arrayValue?.map { $0["id"]?.stringValue }, [SyncRecords.reversalId(of: tx)])
        XCTAssertEqual(p2.json["moreComing"]?.boolValue, false)
        // REST undo-last pages the same way.
        let tx2 = s.call("POST", "/v1/households/\(h)/children/\(kid)/transactions", token: t, json: .obj(["amountCents": 7])).json["transaction"]!["id"]!.stringValue!
        let before = s.pullAll(t, h, since: p2.json["nextToken"]!.stringValue!).token
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(kid)/undo-last", token: t).status, 201)
        let u1 = s.pull(t, h, since: before, limit: 1)
        XCTAssertEqual(u1.json["transactions"]?.arrayValue?.map { $0["id"]?.stringValue }, [tx2])
        XCTAssertEqual(u1.json["moreComing"]?.boolValue, true)
        let all = s.pullAll(t, h, since: before, limit: 1)
        XCTAssertEqual(all.transactions.count, 2)
    }

    func testTokensThatExpire() throws {
        let (acct, t) = s.signup("mum")
        let h = s.household(t), other = s.household(t, name: "Other")
        let good = s.pull(t, h).json["nextToken"]!.stringValue!
        let foreign = s.pull(t, other).json["nextToken"]!.stringValue!
        let decoded = try XCTUnwrap(SyncPosition(token: good))
        let future = SyncPosition(household: h, incarnation: decoded.incarnation, seq: decoded.seq + 5).token
        let wrongIncarnation = SyncPosition(household: h, incarnation: decoded.incarnation + 1, seq: decoded.seq).token
        for bad in ["garbage", "AAAA", foreign, wrongIncarnation, good + "A", String(good.dropLast())] {
            let r = s.pull(t, h, since: bad)
            XCTAssertEqual(r.status, 410, bad); XCTAssertEqual(r.code, "token_expired", bad)
        }
        // A position the household has not reached: the server went back in time.
        let ahead = s.pull(t, h, since: future)
        XCTAssertEqual(ahead.status, 410); XCTAssertEqual(ahead.code, "history_rewound")
        XCTAssertEqual(s.pull(t, h, since: good).status, 200)

        // Deleted and re-created under the same id: old tokens are from another incarnation.
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)", token: t).status, 204)
        XCTAssertEqual(s.pull(t, h, since: good).status, 404)
        XCTAssertEqual(s.call("PUT", "/v1/households/\(h)", token: t, json: .obj(["name": "Again"])).status, 201)
        let expired = s.pull(t, h, since: good)
        XCTAssertEqual(expired.status, 410); XCTAssertEqual(expired.code, "token_expired")
        XCTAssertEqual(s.pull(t, h).status, 200)
        _ = acct

        // Non-members see nothing; bad parameters are 422.
        let (_, stranger) = s.signup("stranger")
        XCTAssertEqual(s.pull(stranger, h).status, 404)
        for q in ["limit=0", "limit=1001", "limit=ten", "wait=61", "wait=-1", "wait=1.5"] {
            let r = s.call("GET", "/v1/households/\(h)/changes?\(q)", token: t)
            XCTAssertEqual(r.status, 422, q); XCTAssertEqual(r.code, "validation_failed", q)
        }
    }

    func testRESTWritesAndPushesShareTheFeed() {
        let (acct, t) = s.signup("mum")
        let h = s.household(t)
        let start = s.pullAll(t, h).token
        let restKid = s.child(t, household: h, name: "Rest")
        let pushKid = SyncRecords.newId(), pushTx = SyncRecords.newId()
        _ = s.pushResults(t, h, children: [SyncRecords.child(pushKid, name: "Pushed", modifiedBy: acct)],
                          transactions: [SyncRecords.transaction(pushTx, child: restKid, amount: 7)])
        let restTx = s.call("POST", "/v1/households/\(h)/children/\(pushKid)/transactions", token: t,
                            json: .obj(["amountCents": 3])).json["transaction"]!["id"]!.stringValue!
        let feed = s.pullAll(t, h, since: start)
        XCTAssertEqual(feed.children.compactMap { $0["id"]?.stringValue }, [restKid, pushKid])
        XCTAssertEqual(feed.transactions.compactMap { $0["id"]?.stringValue }, [pushTx, restTx])
        XCTAssertEqual(feed.children.last?["name"]?.stringValue, "Pushed")
    }

    func testSyncStatus() throws {
        let (acct, t) = s.signup("mum")
        let h = s.household(t)
        let kid = s.child(t, household: h)
        let tablet = s.call("POST", "/v1/tokens", token: t, json: .obj(["deviceName": "Tablet"])).json
        let t2 = tablet["secret"]!.stringValue!
        let token = s.pullAll(t, h).token
        _ = s.pushResults(t2, h, transactions: [SyncRecords.transaction(SyncRecords.newId(), child: kid, amount: 1)])
        // A pull and a push are recorded before they are answered: the status read right
        // after them shows both.
        let st = s.call("GET", "/v1/households/\(h)/sync-status", token: t)
        XCTAssertEqual(st.status, 200)
        XCTAssertEqual(st.json["householdId"]?.stringValue, h)
        XCTAssertEqual(st.json["access"]?["role"]?.stringValue, "owner")
        let devices = st.json["devices"]?.arrayValue ?? []
        XCTAssertEqual(devices.count, 2)
        let phone = try XCTUnwrap(devices.first { $0["lastPullAt"]?.stringValue != nil })
        let pad = try XCTUnwrap(devices.first { $0["tokenId"]?.stringValue == tablet["id"]?.stringValue })
        XCTAssertEqual(phone["accountId"]?.stringValue, acct)
        XCTAssertEqual(phone["changesBehind"]?.intValue, 1, "the tablet's push came after the phone's pull")
        XCTAssertEqual(pad["deviceName"]?.stringValue, "Tablet")
        XCTAssertEqual(pad["lastPullAt"], .null)
        XCTAssertNotNil(pad["lastPushAt"]?.stringValue)
        XCTAssertEqual(pad["changesBehind"]?.intValue, 2, "never pulled: every record")
        let latest = s.call("GET", "/v1/households/\(h)/sync-status", token: t).json["latestToken"]!.stringValue!
        XCTAssertNotEqual(latest, token)
        XCTAssertEqual(s.pull(t, h, since: latest).json["transactions"]?.arrayValue?.count, 0)
        let after = s.call("GET", "/v1/households/\(h)/sync-status", token: t).json["devices"]?.arrayValue ?? []
        XCTAssertEqual(after.first { $0["tokenId"] == phone["tokenId"] }?["changesBehind"]?.intValue, 0,
                       "the pull just answered is already counted")
        let (_, stranger) = s.signup("stranger")
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/sync-status", token: stranger).status, 404)
    }

    /// Writers commit while a reader pages with a small limit: the reader receives every
    /// transaction exactly once, and each writer's transactions in the order it wrote them.
    func testConcurrentWritersNeverSkipOrReorder() throws {
        // Over sockets: the writers post from threads of their own.
        let s = try TestServer(.live)
        defer { s.stop() }
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let kid = s.child(t, household: h)
        let writers = 4, perWriter = 60
        let done = DispatchGroup()
        let base = s.base
        for w in 0..<writers {
            done.enter()
            Thread.detachNewThread {
                for i in 0..<perWriter {
                    let id = String(format: "%08x-0000-4000-8000-%012x", w, i)
                    if i % 2 == 0 {
                        _ = TestServer.request(base: base, "POST", "/v1/households/\(h)/changes", token: t,
                                               json: .obj(["transactions": .array([SyncRecords.transaction(id, child: kid, amount: 1)])]),
                                               rawBody: nil, headers: [:], timeout: 30)
                    } else {
                        _ = TestServer.request(base: base, "POST", "/v1/households/\(h)/children/\(kid)/transactions", token: t,
                                               json: .obj(["id": .string(id), "amountCents": 1]), rawBody: nil, headers: [:], timeout: 30)
                    }
                }
                done.leave()
            }
        }
        var received: [String] = []
        var token: String?
        var finished = false
        while true {
            let writersDone = finished
            let r = s.pull(t, h, since: token, limit: 7)
            XCTAssertEqual(r.status, 200)
            received += r.json["transactions"]!.arrayValue!.compactMap { $0["id"]?.stringValue }
            token = r.json["nextToken"]!.stringValue!
            if writersDone && r.json["moreComing"]?.boolValue == false { break }
            if !finished { finished = done.wait(timeout: .now()) == .success }
        }
        XCTAssertEqual(received.count, writers * perWriter)
        XCTAssertEqual(Set(received).count, received.count, "no duplicates")
        for w in 0..<writers {
            let prefix = String(format: "%08x", w)
            let mine = received.filter { $0.hasPrefix(prefix) }
            XCTAssertEqual(mine, (0..<perWriter).map { String(format: "%08x-0000-4000-8000-%012x", w, $0) })
        }
        let balance = s.call("GET", "/v1/households/\(h)/children/\(kid)", token: t).json["balanceCents"]?.intValue
        XCTAssertEqual(balance, Int64(writers * perWriter))
    }
}
