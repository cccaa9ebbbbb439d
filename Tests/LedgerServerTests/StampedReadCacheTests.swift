import Foundation
import LedgerModel
import LedgerServerTesting
import SQLiteKit
import Synchronization
import XCTest
import HTTPServer
@testable import LedgerCore
@testable import LedgerServer

/// Answers kept by stamp (several processes over PostgreSQL, `ReadCache`): two servers over
/// one database, what is written through one is read through the other at once — children,
/// balances, a removed member's refusal, a household deleted and made again — while reads of
/// an unchanged household are served from memory (counted), and a kept answer never reaches
/// another caller. The kept answers over SQLite are checked for the callers' part too.
final class StampedReadCacheTests: XCTestCase {
    /// Server A (its own schema) and server B over A's database: two processes as the
    /// change bus and the stamp see them.
    private func pair() throws -> (a: TestServer, b: TestServer) {
        guard TestServer.postgresURL != nil else { throw XCTSkip("KIDLEDGER_TEST_DATABASE_URL is not set") }
        let a = try TestServer()
        let url = a.app.configuration.databaseURL
        let b = try TestServer { $0.databaseURL = url }
        return (a, b)
    }

    private func stop(_ p: (a: TestServer, b: TestServer)) {
        p.b.stop()
        p.a.stop()
    }

    private func hits(_ s: TestServer) -> UInt64 { s.app.services.readCache.stampedHitCount }

    /// Reads `path` through `s` until one answer is served from memory: the change bus's
    /// notice of an earlier write may reach `s` after its first read and drop what it kept
    /// (on a busy machine, now and then). False when 40 reads in a row were not.
    private func servedFromMemory(_ s: TestServer, _ path: String, token: String,
                                  check: (TestServer.Reply) -> Bool = { $0.status == 200 }) -> Bool {
        for _ in 0..<40 {
            let before = hits(s)
            let reply = s.call("GET", path, token: token)
            guard check(reply) else { return false }
            if hits(s) == before + 1 { return true }
            usleep(25_000)
        }
        return false
    }

    private func names(_ r: TestServer.Reply) -> [String] {
        (r.json["items"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
    }

    func testAWriteThroughOneProcessIsReadThroughTheOtherAtOnce() throws {
        let p = try pair()
        defer { stop(p) }
        let (a, b) = p
        let (_, mum) = a.signup(TestServer.handle("mum"))
        let h = a.household(mum)
        let ada = a.child(mum, household: h, name: "Ada")
        let list = "/v1/households/\(h)/children"

        XCTAssertEqual(names(b.call("GET", list, token: mum)), ["Ada"])
        XCTAssertTrue(servedFromMemory(b, list, token: mum) { self.names($0) == ["Ada"] },
                      "an unchanged household's list is served from memory")

        for i in 0..<20 {
            let name = "Kid\(i)"
            XCTAssertEqual(a.call("POST", list, token: mum, json: .obj(["name": .string(name)])).status, 201)
            let seen = names(b.call("GET", list, token: mum))
            XCTAssertEqual(seen.count, i + 2, "write \(i)")
            XCTAssertTrue(seen.contains(name), "write \(i): \(seen)")
        }

        // A balance after a transaction, through the child and the list.
        let child = "/v1/households/\(h)/children/\(ada)"
        XCTAssertEqual(b.call("GET", child, token: mum).json["balanceCents"]?.intValue, 0)
        XCTAssertTrue(servedFromMemory(b, child, token: mum) { $0.json["balanceCents"]?.intValue == 0 })
        for i in 1...10 {
            XCTAssertEqual(a.call("POST", child + "/transactions", token: mum, json: .obj(["amountCents": 100])).status, 201)
            XCTAssertEqual(b.call("GET", child, token: mum).json["balanceCents"]?.intValue, Int64(100 * i))
            let listed = b.call("GET", list, token: mum).json["items"]?.arrayValue?.first { $0["id"]?.stringValue == ada }
            XCTAssertEqual(listed?["balanceCents"]?.intValue, Int64(100 * i))
        }

        // An archived child leaves the list at once; a renamed household is read renamed.
        XCTAssertEqual(a.call("PATCH", child, token: mum, json: .obj(["archived": true])).status, 200)
        XCTAssertFalse(names(b.call("GET", list, token: mum)).contains("Ada"))
        XCTAssertTrue(names(b.call("GET", list + "?includeArchived=true", token: mum)).contains("Ada"))
        XCTAssertEqual(a.call("PATCH", "/v1/households/\(h)", token: mum, json: .obj(["name": "Renamed"])).status, 200)
        XCTAssertEqual(b.call("GET", "/v1/households/\(h)", token: mum).json["name"]?.stringValue, "Renamed")
    }

    func testAMemberRemovedThroughOneProcessIsRefusedThroughTheOtherAtOnce() throws {
        let p = try pair()
        defer { stop(p) }
        let (a, b) = p
        let (_, mum) = a.signup(TestServer.handle("mum"))
        let h = a.household(mum)
        let ada = a.child(mum, household: h)
        let dad = a.member(of: h, owner: mum)
        let gran = a.member(of: h, owner: mum, permission: "readOnly")
        let list = "/v1/households/\(h)/children", child = "/v1/households/\(h)/children/\(ada)"
        for path in [list, child] {
            XCTAssertEqual(b.call("GET", path, token: dad.token).status, 200)
            XCTAssertEqual(b.call("GET", path, token: gran.token).status, 200)
        }
        for path in [list, child] {
            XCTAssertTrue(servedFromMemory(b, path, token: dad.token), "each member's answers kept: \(path)")
            XCTAssertTrue(servedFromMemory(b, path, token: gran.token), "each member's answers kept: \(path)")
        }

        XCTAssertEqual(a.call("DELETE", "/v1/households/\(h)/share/participants/\(dad.id)", token: mum).status, 204)
        for path in [list, child] {
            XCTAssertEqual(b.call("GET", path, token: dad.token).code, "access_revoked", path)
            XCTAssertEqual(b.call("GET", path, token: gran.token).status, 200, path)
        }
        // The household deleted through A: nobody reads it through B.
        XCTAssertEqual(a.call("DELETE", "/v1/households/\(h)", token: mum).status, 204)
        for path in [list, child] {
            XCTAssertEqual(b.call("GET", path, token: mum).code, "not_found", path)
            XCTAssertEqual(b.call("GET", path, token: gran.token).code, "not_found", path)
        }
    }

    /// The stamp alone keeps a kept answer honest (the change bus is best effort): changes
    /// made straight in the database announce nothing to either process. One that leaves the
    /// household's sequence where it was shows the answer is kept; the sequence advanced (as
    /// every write does), or a participant's standing changed, and the next read is fresh.
    func testTheHouseholdsStampDecidesWhetherAKeptAnswerIsServed() throws {
        let p = try pair()
        defer { stop(p) }
        let (a, b) = p
        let (_, mum) = a.signup(TestServer.handle("mum"))
        let h = a.household(mum)
        let ada = a.child(mum, household: h, name: "Ada")
        let dad = a.member(of: h, owner: mum)
        let list = "/v1/households/\(h)/children"
        XCTAssertEqual(names(b.call("GET", list, token: mum)), ["Ada"])
        XCTAssertEqual(names(b.call("GET", list, token: dad.token)), ["Ada"])

        XCTAssertTrue(servedFromMemory(b, list, token: mum) { self.names($0) == ["Ada"] })
        try a.execute("UPDATE children SET name = 'Bea' WHERE household_id = ? AND id = ?", [.text(h), .text(ada)])
        let kept = hits(b)
        XCTAssertEqual(names(b.call("GET", list, token: mum)), ["Ada"], "kept: nothing moved the stamp")
        XCTAssertEqual(hits(b), kept + 1)

        try a.execute("UPDATE households SET seq = seq + 1 WHERE id = ?", [.text(h)])
        let before = hits(b)
        XCTAssertEqual(names(b.call("GET", list, token: mum)), ["Bea"], "the sequence moved: read afresh")
        XCTAssertEqual(names(b.call("GET", list, token: dad.token)), ["Bea"])
        XCTAssertEqual(hits(b), before, "nothing served from memory")

        XCTAssertEqual(b.call("GET", list, token: dad.token).status, 200)
        try a.execute("UPDATE participants SET status = 'revoked' WHERE household_id = ? AND account_id = ?",
                      [.text(h), .text(dad.id)])
        XCTAssertEqual(b.call("GET", list, token: dad.token).code, "access_revoked", "the standing is in the stamp")
        try a.execute("UPDATE participants SET status = 'accepted' WHERE household_id = ? AND account_id = ?",
                      [.text(h), .text(dad.id)])
        XCTAssertEqual(names(b.call("GET", list, token: dad.token)), ["Bea"])
        // The owner made over to dad: mum is now a stranger, whatever she kept.
        XCTAssertEqual(names(b.call("GET", list, token: mum)), ["Bea"])
        try a.execute("UPDATE households SET owner_account_id = ? WHERE id = ?", [.text(dad.id), .text(h)])
        XCTAssertEqual(b.call("GET", list, token: mum).code, "not_found")
    }

    /// A kept answer is the caller's own: strangers, invitees who have not accepted and
    /// forged tokens are refused while a member's answer is kept (both backends).
    func testAKeptAnswerNeverReachesAnotherCaller() throws {
        let s = try TestServer()
        defer { s.stop() }
        let (_, mum) = s.signup(TestServer.handle("mum"))
        let h = s.household(mum)
        let ada = s.child(mum, household: h)
        let invitee = s.member(of: h, owner: mum, accept: false)
        let (_, stranger) = s.signup(TestServer.handle("x"))
        let other = s.household(stranger)
        _ = s.child(stranger, household: other)
        let paths = ["/v1/households/\(h)/children", "/v1/households/\(h)/children?includeArchived=true",
                     "/v1/households/\(h)/children/\(ada)"]
        for path in paths {
            XCTAssertEqual(s.call("GET", path, token: mum).status, 200, path)
            if TestServer.postgresURL != nil { XCTAssertTrue(servedFromMemory(s, path, token: mum), path) }
        }
        let before = s.app.services.readCache.stampedHitCount
        for path in paths {
            XCTAssertEqual(s.call("GET", path, token: stranger).code, "not_found", path)
            XCTAssertEqual(s.call("GET", path, token: invitee.token).code, "not_found", path)
            XCTAssertEqual(s.call("GET", path, token: "kl_forged" + String(repeating: "a", count: 40)).status, 401, path)
            XCTAssertEqual(s.call("GET", path, token: mum).status, 200, path)
        }
        if TestServer.postgresURL != nil {
            XCTAssertEqual(s.app.services.readCache.stampedHitCount, before + UInt64(paths.count), "only mum's reads were kept answers")
        }
        let metrics = String(decoding: s.call("GET", "/metrics").body, as: UTF8.self)
        XCTAssertTrue(metrics.contains("\nkidledger_read_cache_stamped_hits_total \(s.app.services.readCache.stampedHitCount)\n"),
                      "the count is published")
    }

    /// The cache's own bookkeeping: an answer is the key's within its household, a commit
    /// that touched a household drops its answers and no other's, and the table empties
    /// when full instead of growing.
    func testKeptAnswersAreDroppedByHouseholdAndBounded() {
        let cache = ReadCache(capacity: 3, tokenLifetime: 0.5)
        func stamp(_ seq: Int64, _ account: String = "a") -> HouseholdReadStamp {
            HouseholdReadStamp(row: 1, seq: seq, incarnation: 1, account: account,
                               access: AccessRecord(ownerAccountId: "a", everAccepted: false))
        }
        let ok = HTTPResponse(status: 200, contentType: "application/json", body: "{}")
        cache.store(ok, household: "h1", key: "children h1 a", stamp: stamp(4))
        cache.store(ok, household: "h2", key: "children h2 a", stamp: stamp(9))
        XCTAssertEqual(cache.stamped(household: "h1", key: "children h1 a")?.stamp, stamp(4))
        XCTAssertNil(cache.stamped(household: "h2", key: "children h1 a"), "a key is looked up in its household only")
        XCTAssertNotEqual(stamp(4, "a"), stamp(4, "b"), "the account is part of the stamp")
        cache.forget(households: ["h1"])
        XCTAssertNil(cache.stamped(household: "h1", key: "children h1 a"))
        XCTAssertNotNil(cache.stamped(household: "h2", key: "children h2 a"))
        cache.store(ok, household: "h2", key: "children h2 a", stamp: stamp(10))
        XCTAssertEqual(cache.stamped(household: "h2", key: "children h2 a")?.stamp, stamp(10), "replaced, not added")
        cache.store(ok, household: "h3", key: "k3", stamp: stamp(1))
        cache.store(ok, household: "h4", key: "k4", stamp: stamp(1))
        cache.store(ok, household: "h5", key: "k5", stamp: stamp(1))
        XCTAssertNil(cache.stamped(household: "h2", key: "children h2 a"), "full: emptied before the next one")
        XCTAssertNotNil(cache.stamped(household: "h5", key: "k5"))
    }

    /// Stamps read together are each the one read alone: by household and account, a
    /// stranger's standing, no stamp for a household that does not exist.
    func testStampsReadTogetherAreTheStampsReadAlone() throws {
        guard TestServer.postgresURL != nil else { throw XCTSkip("KIDLEDGER_TEST_DATABASE_URL is not set") }
        let s = try TestServer()
        defer { s.stop() }
        let (mumId, mum) = s.signup(TestServer.handle("mum"))
        let (dadId, dad) = s.signup(TestServer.handle("dad"))
        let h1 = s.household(mum), h2 = s.household(dad)
        _ = s.child(mum, household: h1)
        let gran = s.member(of: h2, owner: dad, permission: "readOnly")
        let missing = UUID().lowercased
        let wanted: [(household: String, account: String)] = [(h1, mumId), (h2, dadId), (h1, dadId), (h2, gran.id),
                                                               (missing, mumId), (h1, mumId), (h2, Caller.noAccount)]
        let storage = s.app.services.storage
        let together = try storage.readStamps(wanted)
        let alone = try wanted.map { try storage.readStamps([$0])[0] }
        XCTAssertEqual(together, alone)
        XCTAssertEqual(together.count, wanted.count)
        XCTAssertNil(together[4], "no such household")
        XCTAssertNotNil(together[0]); XCTAssertNotNil(together[2])
        XCTAssertEqual(together[0]?.seq, together[2]?.seq)
        XCTAssertNotEqual(together[0], together[2], "the owner's stamp is not a stranger's")
        XCTAssertEqual(together[3]?.access.status, .accepted)
        XCTAssertEqual(together[3]?.access.permission, .readOnly)
        XCTAssertEqual(together[1]?.access.ownerAccountId, dadId)
    }

    /// Many callers of several households reading at once (stamps read in batches): each
    /// gets its own household's answer, a stranger none.
    func testConcurrentReadersEachGetTheirOwnAnswer() throws {
        let s = try TestServer()
        defer { s.stop() }
        let families: [(token: String, household: String, name: String)] = (0..<4).map { i in
            let (_, t) = s.signup(TestServer.handle("f\(i)"))
            let h = s.household(t)
            let name = "Kid\(i)"
            _ = s.child(t, household: h, name: name)
            return (t, h, name)
        }
        let (_, stranger) = s.signup(TestServer.handle("x"))
        let wrong = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 200) { n in
            let f = families[n % families.count]
            let path = "/v1/households/\(f.household)/children"
            if n % 5 == 4 {
                let r = s.call("GET", path, token: stranger)
                if r.status != 404 { wrong.withLock { $0.append("stranger read \(f.household): \(r.status)") } }
                return
            }
            let r = s.call("GET", path, token: f.token)
            let names = (r.json["items"]?.arrayValue ?? []).compactMap { $0["name"]?.stringValue }
            if names != [f.name] { wrong.withLock { $0.append("\(f.name) read \(names) (\(r.status))") } }
        }
        XCTAssertEqual(wrong.withLock { $0 }, [])
    }
}
