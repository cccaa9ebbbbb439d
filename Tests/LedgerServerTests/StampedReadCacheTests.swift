import Foundation
import LedgerModel
import LedgerServerTesting
import SQLiteKit
import XCTest
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
        var before = hits(b)
        XCTAssertEqual(names(b.call("GET", list, token: mum)), ["Ada"])
        XCTAssertEqual(hits(b), before + 1, "an unchanged household's list is served from memory")

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
        before = hits(b)
        XCTAssertEqual(b.call("GET", child, token: mum).json["balanceCents"]?.intValue, 0)
        XCTAssertEqual(hits(b), before + 1)
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
        let before = hits(b)
        for path in [list, child] {
            XCTAssertEqual(b.call("GET", path, token: dad.token).status, 200)
            XCTAssertEqual(b.call("GET", path, token: gran.token).status, 200)
        }
        XCTAssertEqual(hits(b), before + 4, "each member's answers kept")

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

        try a.execute("UPDATE children SET name = 'Bea' WHERE household_id = ? AND id = ?", [.text(h), .text(ada)])
        var before = hits(b)
        XCTAssertEqual(names(b.call("GET", list, token: mum)), ["Ada"], "kept: nothing moved the stamp")
        XCTAssertEqual(hits(b), before + 1)

        try a.execute("UPDATE households SET seq = seq + 1 WHERE id = ?", [.text(h)])
        before = hits(b)
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
            XCTAssertEqual(s.call("GET", path, token: mum).status, 200, path)
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
    }
}
