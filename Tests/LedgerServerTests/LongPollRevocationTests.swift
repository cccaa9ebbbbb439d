import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStorageSQLite
import LedgerServerTesting
import SQLiteKit
import Synchronization
import XCTest

/// A parked long-poll checks its token and its access again whenever it wakes: revoking
/// the token, the caller's access or deleting the household answers it at once (401, 403,
/// 404), and nothing written after a revocation reaches the revoked token.
final class LongPollRevocationTests: XCTestCase {
    var s: TestServer!
    override func setUpWithError() throws { s = try TestServer() }
    override func tearDown() { s.stop() }

    /// Starts a pull on another thread; the returned closure waits for its reply and the time it came.
    private func parkedPull(_ token: String, _ household: String, since: String, wait: Int) -> () -> (TestServer.Reply, Date) {
        let box = ResultBox<(TestServer.Reply, Date)>()
        let sem = DispatchSemaphore(value: 0)
        let s = self.s!
        Thread.detachNewThread {
            let r = s.pull(token, household, since: since, wait: wait)
            box.set(.success((r, Date())))
            sem.signal()
        }
        let end = Date().addingTimeInterval(5)
        while s.app.services.notifier.parked < 1 && Date() < end { Thread.sleep(forTimeInterval: 0.002) }
        XCTAssertEqual(s.app.services.notifier.parked, 1, "the pull parked")
        return { sem.wait(); return try! box.get() }
    }

    /// A second device token for an account.
    private func secondToken(_ token: String) -> (id: String, secret: String) {
        let r = s.call("POST", "/v1/tokens", token: token, json: .obj(["deviceName": "tablet"]))
        XCTAssertEqual(r.status, 201)
        return (r.json["id"]!.stringValue!, r.json["secret"]!.stringValue!)
    }

    /// Mum owns a shared household with one child; dad is an accepted read-write participant.
    private func sharedHousehold() -> (mum: String, dad: String, dadId: String, household: String, child: String) {
        let (_, mum) = s.signup("mum")
        let (dadId, dad) = s.signup("dad")
        let h = s.household(mum)
        let kid = s.child(mum, household: h)
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/share", token: mum).status, 201)
        let inv = s.call("POST", "/v1/households/\(h)/share/participants", token: mum,
                         json: .obj(["handle": "dad", "permission": "readWrite"]))
        XCTAssertEqual(inv.status, 201)
        let invitation = inv.json["invitationId"]!.stringValue!
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(invitation)/accept", token: dad).status, 200)
        return (mum, dad, dadId, h, kid)
    }

    /// A write made outside the server process (no wake-up reaches the parked pull).
    private func writeOutside(_ sql: String, _ params: [SQLiteValue]) throws {
        if s.app.configuration.databaseURL != nil {
            // Another process's write: the same statement in PostgreSQL's types.
            return try s.execute(sql, params, postgres: sql.replacingOccurrences(of: "revoked_at = 1", with: "revoked_at = now()")
                .split(separator: "?", omittingEmptySubsequences: false).enumerated()
                .map { $0.offset == 0 ? String($0.element) : "$\($0.offset)" + $0.element }.joined())
        }
        let db = try SQLiteConnection(path: s.app.configuration.databasePath)
        try db.run(sql, params)
    }

    /// Mum's household with one child, and a pull parked for 20 s by her second device.
    private func parkedTabletPull() -> (mum: String, household: String, child: String, tablet: (id: String, secret: String),
                                        since: String, reply: () -> (TestServer.Reply, Date)) {
        let (_, mum) = s.signup("mum")
        let h = s.household(mum)
        let kid = s.child(mum, household: h)
        let tablet = secondToken(mum)
        let since = s.pullAll(tablet.secret, h).token
        return (mum, h, kid, tablet, since, parkedPull(tablet.secret, h, since: since, wait: 20))
    }

    func testRevokingTheTokenAnswersItsParkedPull401AtOnce() {
        let (mum, h, kid, tablet, since, reply) = parkedTabletPull()
        let start = Date()
        XCTAssertEqual(s.call("DELETE", "/v1/tokens/\(tablet.id)", token: mum).status, 204)
        // Written after the revocation: must never reach the tablet.
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(kid)/transactions", token: mum,
                              json: .obj(["amountCents": 4242])).status, 201)
        let (r, at) = reply()
        XCTAssertEqual(r.status, 401)
        XCTAssertEqual(r.code, "unauthenticated")
        XCTAssertFalse(String(decoding: r.body, as: UTF8.self).contains("4242"))
        XCTAssertLessThan(at.timeIntervalSince(start), 2, "answered when the token was revoked, not at the end of the wait")
        XCTAssertEqual(s.app.services.notifier.parked, 0)
        // Mum's own token still pulls.
        XCTAssertEqual(s.pull(mum, h, since: since).status, 200)
    }

    func testAChangeAfterTheTokenWasRevokedIsNotDelivered() throws {
        let (mum, h, kid, tablet, _, reply) = parkedTabletPull()
        // Revoked without a wake-up (as by another process), then a change wakes the pull.
        try writeOutside("UPDATE tokens SET revoked_at = 1 WHERE id = ?", [.text(tablet.id)])
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(kid)/transactions", token: mum,
                              json: .obj(["amountCents": 4242])).status, 201)
        let (r, _) = reply()
        XCTAssertEqual(r.status, 401)
        XCTAssertFalse(String(decoding: r.body, as: UTF8.self).contains("4242"))
    }

    func testATokenRevokedWhileParkedIs401WhenTheWaitEnds() throws {
        let (_, mum) = s.signup("mum")
        let h = s.household(mum)
        let tablet = secondToken(mum)
        let r = try replyAfterOutsideWrites(tablet.secret, h, [("UPDATE tokens SET revoked_at = 1 WHERE id = ?", [.text(tablet.id)])])
        XCTAssertEqual(r.status, 401)
        XCTAssertEqual(r.code, "unauthenticated")
    }

    /// Parks a one-second pull, makes `writes` outside the server (no wake-up), and returns
    /// what the pull answers when its wait ends.
    private func replyAfterOutsideWrites(_ token: String, _ household: String,
                                         _ writes: [(String, [SQLiteValue])]) throws -> TestServer.Reply {
        let since = s.pullAll(token, household).token
        let reply = parkedPull(token, household, since: since, wait: 1)
        for (sql, params) in writes { try writeOutside(sql, params) }
        return reply().0
    }

    func testRevokingAccessAnswersTheParticipantsParkedPull403AtOnce() {
        let f = sharedHousehold()
        let since = s.pullAll(f.dad, f.household).token
        let reply = parkedPull(f.dad, f.household, since: since, wait: 20)
        let start = Date()
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(f.household)/share/participants/\(f.dadId)", token: f.mum).status, 204)
        XCTAssertEqual(s.call("POST", "/v1/households/\(f.household)/children/\(f.child)/transactions", token: f.mum,
                              json: .obj(["amountCents": 4242])).status, 201)
        let (r, at) = reply()
        XCTAssertEqual(r.status, 403)
        XCTAssertEqual(r.code, "access_revoked")
        XCTAssertFalse(String(decoding: r.body, as: UTF8.self).contains("4242"))
        XCTAssertLessThan(at.timeIntervalSince(start), 2)
    }

    func testAccessRevokedWhileParkedIs403WhenTheWaitEnds() throws {
        let f = sharedHousehold()
        let r = try replyAfterOutsideWrites(f.dad, f.household, [(revokeDad, [.text(f.household), .text(f.dadId)])])
        XCTAssertEqual(r.status, 403)
        XCTAssertEqual(r.code, "access_revoked")
    }

    private let revokeDad = "UPDATE participants SET status = 'revoked' WHERE household_id = ? AND account_id = ?"

    func testDeletingTheHouseholdAnswersParkedPulls404AtOnce() {
        let f = sharedHousehold()
        let since = s.pullAll(f.dad, f.household).token
        let reply = parkedPull(f.dad, f.household, since: since, wait: 20)
        let start = Date()
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(f.household)", token: f.mum).status, 204)
        let (r, at) = reply()
        XCTAssertEqual(r.status, 404)
        XCTAssertLessThan(at.timeIntervalSince(start), 2)
    }

    func testARevokedTokenIs401BeforeRevokedAccessIs403() throws {
        let f = sharedHousehold()
        let r = try replyAfterOutsideWrites(f.dad, f.household, [
            (revokeDad, [.text(f.household), .text(f.dadId)]),
            ("UPDATE tokens SET revoked_at = 1 WHERE revoked_at IS NULL AND account_id = ?", [.text(f.dadId)]),
        ])
        XCTAssertEqual(r.status, 401)
    }

    /// Revoking one token wakes only that token's pulls; the others stay parked.
    func testNotifierWakesOnlyTheRevokedTokensWaiters() {
        let notifier = ChangeNotifier()
        let woken = Mutex<[String]>([])
        for (token, household) in [("t1", "h1"), ("t1", "h2"), ("t2", "h1")] {
            _ = notifier.register(household: household, token: token, seconds: 30) { timedOut in
                XCTAssertFalse(timedOut)
                woken.withLock { $0.append(token + "@" + household) }
            }
        }
        XCTAssertEqual(notifier.parked, 3)
        notifier.notify(tokens: ["t1"])
        XCTAssertEqual(Set(woken.withLock { $0 }), ["t1@h1", "t1@h2"])
        XCTAssertEqual(notifier.parked, 1)
        notifier.notify(["h1"])
        XCTAssertEqual(Set(woken.withLock { $0 }), ["t1@h1", "t1@h2", "t2@h1"])
        XCTAssertEqual(notifier.parked, 0)
        notifier.notify(tokens: ["t1", "t2"])
        XCTAssertEqual(woken.withLock { $0.count }, 3)
    }

    /// A pull that arrives while the server stops is refused a place (and must not trap).
    func testRegisteringAfterShutdownParksNothing() {
        let notifier = ChangeNotifier()
        notifier.shutdown()
        for i in 0..<100 {
            XCTAssertNil(notifier.register(household: "h\(i)", token: "t", seconds: 30) { _ in XCTFail("woken") })
        }
        XCTAssertEqual(notifier.parked, 0)
    }
}
