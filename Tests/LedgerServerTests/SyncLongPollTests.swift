import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStorageSQLite
import LedgerServerTesting
import XCTest

/// Long-polls: a commit wakes a waiting pull, an idle one times out, shutdown answers it.
final class SyncLongPollTests: XCTestCase {
    var s: TestServer!
    override func setUpWithError() throws { s = try TestServer() }
    override func tearDown() { s.stop() }

    /// Starts a pull on another thread; the returned closure waits for its reply.
    private func background(_ work: @escaping @Sendable () -> TestServer.Reply) -> () -> (TestServer.Reply, Date) {
        let box = ResultBox<(TestServer.Reply, Date)>()
        let sem = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let r = work()
            box.set(.success((r, Date())))
            sem.signal()
        }
        return { sem.wait(); return try! box.get() }
    }

    private func waitUntilParked(_ n: Int, file: StaticString = #filePath, line: UInt = #line) {
        let end = Date().addingTimeInterval(5)
        while s.app.services.notifier.parked < n && Date() < end { Thread.sleep(forTimeInterval: 0.002) }
        XCTAssertEqual(s.app.services.notifier.parked, n, file: file, line: line)
    }

    func testCommitWakesWaitingPull() {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let kid = s.child(t, household: h)
        let token = s.pullAll(t, h).token
        let s = self.s!
        let reply = background { s.pull(t, h, since: token, wait: 20) }
        waitUntilParked(1)
        let start = Date()
        let w = s.call("POST", "/v1/households/\(h)/children/\(kid)/transactions", token: t, json: .obj(["amountCents": 42]))
        XCTAssertEqual(w.status, 201)
        let (r, at) = reply()
        let latency = at.timeIntervalSince(start)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.json["transactions"]?.arrayValue?.first?["amountCents"]?.intValue, 42)
        XCTAssertNotEqual(r.json["nextToken"]?.stringValue, token)
        XCTAssertLessThan(latency, 0.5, "woken \(Int(latency * 1000)) ms after the write started")
        XCTAssertEqual(s.app.services.notifier.parked, 0)

        // A push wakes it too; a write to another household does not.
        let other = s.household(t, name: "Other")
        let otherKid = s.child(t, household: other)
        let next = r.json["nextToken"]!.stringValue!
        let second = background { s.pull(t, h, since: next, wait: 20) }
        waitUntilParked(1)
        s.call("POST", "/v1/households/\(other)/children/\(otherKid)/transactions", token: t, json: .obj(["amountCents": 1]))
        Thread.sleep(forTimeInterval: 0.05)
        XCTAssertEqual(s.app.services.notifier.parked, 1)
        _ = s.pushResults(t, h, transactions: [SyncRecords.transaction(SyncRecords.newId(), child: kid, amount: 5)])
        let (r2, _) = second()
        XCTAssertEqual(r2.json["transactions"]?.arrayValue?.first?["amountCents"]?.intValue, 5)
    }

    func testIdlePullTimesOutWithSameToken() {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let token = s.pullAll(t, h).token
        let start = Date()
        let r = s.pull(t, h, since: token, wait: 1)
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertEqual(r.status, 200)
        XCTAssertEqual(r.json["nextToken"]?.stringValue, token)
        XCTAssertEqual(r.json["children"]?.arrayValue?.count, 0)
        XCTAssertEqual(r.json["transactions"]?.arrayValue?.count, 0)
        XCTAssertEqual(r.json["moreComing"]?.boolValue, false)
        XCTAssertNotNil(r.json["household"]?["id"])
        XCTAssertGreaterThan(elapsed, 0.95)
        XCTAssertLessThan(elapsed, 1.8)

        // Something new already: answered at once despite wait.
        _ = s.child(t, household: h)
        let quick = Date()
        XCTAssertEqual(s.pull(t, h, since: token, wait: 30).json["children"]?.arrayValue?.count, 1)
        XCTAssertLessThan(Date().timeIntervalSince(quick), 0.5)
        // A full pull never waits.
        XCTAssertEqual(s.pull(t, h, wait: 30).json["children"]?.arrayValue?.count, 1)
    }

    func testShutdownAnswersParkedPulls() {
        let (_, t) = s.signup("mum")
        let h = s.household(t)
        let token = s.pullAll(t, h).token
        let s = self.s!
        let replies = (0..<3).map { _ in background { s.pull(t, h, since: token, wait: 30) } }
        waitUntilParked(3)
        let start = Date()
        s.app.stop()
        for wait in replies {
            let (r, at) = wait()
            XCTAssertEqual(r.status, 200)
            XCTAssertEqual(r.json["nextToken"]?.stringValue, token)
            XCTAssertLessThan(at.timeIntervalSince(start), 2)
        }
        try? FileManager.default.removeItem(atPath: s.dataDirectory)
        self.s = try? TestServer()
    }
}
