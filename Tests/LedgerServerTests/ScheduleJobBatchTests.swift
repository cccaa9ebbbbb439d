import Foundation
import LedgerServerTesting
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import XCTest

/// The job pays a household's due schedules in one write (both backends; over PostgreSQL
/// their rows read in one statement, their payments' ids looked up in one, the payments
/// inserted and the schedules updated as one statement each): every payment as a write of
/// its own would have made it, to the byte.
final class ScheduleJobBatchTests: XCTestCase {
    var clock: TestClock!
    var s: TestServer!
    var owner = "", h = "", ada = "", bo = ""

    override func setUpWithError() throws {
        clock = TestClock("2026-12-01T08:00:00Z")
        s = try TestServer.scheduled(clock)
        owner = s.signup("mum").1
        h = s.household(owner)
        ada = s.child(owner, household: h, name: "Ada")
        bo = s.child(owner, household: h, name: "Bo")
    }
    override func tearDown() { s.stop() }

    /// Notes that an array literal must quote (quotes, backslashes, braces, commas, NULL,
    /// non-ASCII) come back as written, on payments and on the schedules the job settled;
    /// each schedule's payments are in date order in the ledger, and all reach the feed.
    func testSeveralSchedulesOfAHouseholdPaidInOneWrite() throws {
        let notes = ["say \"hi\" \\ {a,b} NULL", "NULL", "", "€ 😀 ü", "a,b}", "\\\""]
        var ids: [(id: String, child: String, note: String, cents: Int64)] = []
        for (i, note) in notes.enumerated() {
            let child = i % 2 == 0 ? ada : bo
            let cents = Int64(100 + i)
            let r = s.addSchedule(owner, h, child, ScheduleFixtures.allowance(cents, "weekly", from: "2026-12-04", zone: "Europe/Zurich",
                                                                             extra: ["note": .string(note)]))
            XCTAssertEqual(r.status, 201, "\(r.json)")
            ids.append((r.json["id"]!.stringValue!, child, note, cents))
        }
        let start = try XCTUnwrap(s.pull(owner, h).json["nextToken"]?.stringValue)
        clock.set("2026-12-19T12:00:00Z")  // three Fridays: the 4th, the 11th, the 18th
        let report = s.payDue()
        XCTAssertEqual(report.payments, 3 * notes.count)
        XCTAssertEqual(report.failed, 0)
        XCTAssertEqual(s.payDue().payments, 0, "every date settled")

        let dates = ["2026-12-04", "2026-12-11", "2026-12-18"]
        for child in [ada, bo] {
            let mine = ids.filter { $0.child == child }
            let txs = s.transactions(owner, h, child)
            XCTAssertEqual(txs.count, 3 * mine.count)
            for schedule in mine {
                let paymentIds = dates.map { ScheduleFixtures.paymentId("allowance", schedule.id, $0) }
                // Newest first: the schedule's later dates before its earlier ones.
                let listed = txs.map { $0["id"]!.stringValue! }.filter { paymentIds.contains($0) }
                XCTAssertEqual(listed, paymentIds.reversed())
                for t in txs where paymentIds.contains(t["id"]!.stringValue!) {
                    XCTAssertEqual(t["note"]?.stringValue, schedule.note)
                    XCTAssertEqual(t["amountCents"]?.intValue, schedule.cents)
                    XCTAssertEqual(t["source"]?.stringValue, "allowance")
                }
                XCTAssertEqual(t(schedule.id)["note"]?.stringValue, schedule.note)
                XCTAssertEqual(t(schedule.id)["nextDueDate"]?.stringValue, "2026-12-25")
            }
            XCTAssertEqual(s.balance(owner, h, child), 3 * mine.reduce(0) { $0 + $1.cents })
        }
        // The due instant: midnight in Zurich.
        let first = s.transactions(owner, h, ada).first { $0["id"]?.stringValue == ScheduleFixtures.paymentId("allowance", ids[0].id, "2026-12-04") }
        XCTAssertEqual(first?["createdAt"]?.stringValue, "2026-12-03T23:00:00.000Z")
        let feed = s.pull(owner, h, since: start).json["transactions"]?.arrayValue ?? []
        XCTAssertEqual(Set(feed.map { $0["id"]!.stringValue! }),
                       Set(ids.flatMap { s in dates.map { ScheduleFixtures.paymentId("allowance", s.id, $0) } }))
    }

    /// Some of a household's payments are there already (a device paid them, one was undone):
    /// the write pays only the others, and an undone payment stays undone.
    func testPaymentsAlreadyThereAreLeftAsTheyAre() {
        let a = s.addSchedule(owner, h, ada, ScheduleFixtures.allowance(500, "weekly", from: "2026-12-04", zone: "UTC")).json["id"]!.stringValue!
        let b = s.addSchedule(owner, h, ada, ScheduleFixtures.allowance(300, "weekly", from: "2026-12-04", zone: "UTC")).json["id"]!.stringValue!
        clock.set("2026-12-12T10:00:00Z")
        // A device paid a's 2026-12-04 offline; b's 2026-12-04 was paid by it and undone.
        var pushed: [JSONValue] = []
        for (schedule, cents) in [(a, Int64(500)), (b, 300)] {
            var record = SyncRecords.transaction(ScheduleFixtures.paymentId("allowance", schedule, "2026-12-04"), child: ada,
                                                 amount: cents, createdAt: Timestamp.parse("2026-12-04T00:00:00Z")!).objectValue!
            record["source"] = "allowance"
            pushed.append(.object(record))
        }
        XCTAssertEqual(s.pushResults(owner, h, transactions: pushed).map { $0["status"]?.stringValue }, ["saved", "saved"])
        let undone = ScheduleFixtures.paymentId("allowance", b, "2026-12-04")
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/transactions/\(undone)/reversal", token: owner).status, 201)
        XCTAssertEqual(s.payDue().payments, 2, "the 11th of each")
        XCTAssertEqual(s.balance(owner, h, ada), 500 + 500 + 300)
        XCTAssertEqual(s.transactions(owner, h, ada).count, 5)
        XCTAssertEqual(s.payDue().payments, 0)
    }

    /// Several new transactions in one write (a push): over PostgreSQL they are held back and
    /// sent as one statement, yet every statement still runs in the order the write asked
    /// for it — the reversal's mark lands on the row inserted just before it, and the
    /// ledger's order is the push's.
    func testTransactionsHeldBackKeepTheirOrder() {
        let a = SyncRecords.newId(), b = SyncRecords.newId(), c = SyncRecords.newId()
        let rev = SyncRecords.reversalId(of: a)
        let r = s.pushResults(owner, h, transactions: [
            SyncRecords.transaction(a, child: ada, amount: 700, note: "a \"quoted\" {note}"),
            SyncRecords.transaction(rev, child: ada, amount: -700, reverses: a),
            SyncRecords.transaction(b, child: ada, amount: 20),
            SyncRecords.transaction(c, child: bo, amount: 3),
        ])
        XCTAssertEqual(r.map { $0["status"]?.stringValue }, ["saved", "saved", "saved", "saved"])
        let txs = s.transactions(owner, h, ada)
        XCTAssertEqual(txs.map { $0["id"]!.stringValue! }, [b, rev, a], "newest first, in the push's order")
        XCTAssertEqual(txs.last?["reversedById"]?.stringValue, rev)
        XCTAssertEqual(txs.last?["note"]?.stringValue, "a \"quoted\" {note}")
        XCTAssertEqual(s.balance(owner, h, ada), 20)
        XCTAssertEqual(s.balance(owner, h, bo), 3)
        // The reversal's id stays reserved, and a replay of the whole push changes nothing.
        let again = s.pushResults(owner, h, transactions: [SyncRecords.transaction(a, child: ada, amount: 700, note: "a \"quoted\" {note}"),
                                                           SyncRecords.transaction(b, child: ada, amount: 20)])
        XCTAssertEqual(again.map { $0["status"]?.stringValue }, ["unchanged", "unchanged"])
        XCTAssertEqual(s.transactions(owner, h, ada).count, 3)
    }

    /// While requests' writes reach the writer the job shares with them (SQLite's), a
    /// household's due schedules are paid in writes of `perWriteBesideRequests`, each its own
    /// commit; with no request in sight, in writes of `perWrite`. Every date is paid once
    /// either way. Over PostgreSQL (no shared writer) the size is always `perWrite`.
    func testWritesAreSizedToTheRequestsTraffic() {
        var ids: [String] = []
        for i in 0..<6 {
            let r = s.addSchedule(owner, h, i % 2 == 0 ? ada : bo, ScheduleFixtures.allowance(Int64(100 + i), "weekly", from: "2026-12-04", zone: "UTC"))
            XCTAssertEqual(r.status, 201, "\(r.json)")
            ids.append(r.json["id"]!.stringValue!)
        }
        let shared = s.app.storage.secondsSinceRequestWrite() != nil
        XCTAssertEqual(shared, TestServer.postgresURL == nil, "only SQLite's writer is shared")
        var pacing = ScheduleJob.Pacing()
        pacing.perWrite = 100
        pacing.perWriteBesideRequests = 2
        pacing.requestsRecently = 3600  // the schedules' creation was a request's write
        s.app.scheduleJob.pacing = pacing
        XCTAssertEqual(pacing.schedulesPerWrite(sinceRequest: nil), 100)
        XCTAssertEqual(pacing.schedulesPerWrite(sinceRequest: 1), 2)
        XCTAssertEqual(pacing.schedulesPerWrite(sinceRequest: 3601), 100)

        clock.set("2026-12-12T10:00:00Z")  // two Fridays each
        var before = commits()
        XCTAssertEqual(s.payDue().payments, 12)
        XCTAssertEqual(commits() - before, shared ? 3 : 1, "six schedules in writes of two beside requests, else one write")
        XCTAssertEqual(s.payDue().payments, 0, "every date settled")

        pacing.requestsRecently = 0  // no request is recent enough
        s.app.scheduleJob.pacing = pacing
        clock.set("2026-12-19T10:00:00Z")
        before = commits()
        XCTAssertEqual(s.payDue().payments, 6)
        XCTAssertEqual(commits() - before, 1, "one write of all six")
        for (i, schedule) in ids.enumerated() {
            let child = i % 2 == 0 ? ada : bo
            let paid = s.transactions(owner, h, child).map { $0["id"]!.stringValue! }
            for date in ["2026-12-04", "2026-12-11", "2026-12-18"] {
                XCTAssertEqual(paid.filter { $0 == ScheduleFixtures.paymentId("allowance", schedule, date) }.count, 1)
            }
        }
        XCTAssertEqual(s.balance(owner, h, ada), 3 * (100 + 102 + 104))
        XCTAssertEqual(s.balance(owner, h, bo), 3 * (101 + 103 + 105))
    }

    /// Over PostgreSQL the job pays several households' schedules in one transaction (one
    /// commit; their rows locked in one statement), over SQLite in a write each. Either way
    /// each household's payments are paid once, at its own change-feed positions, and reach
    /// its feed; a household split into several writes' worth of schedules is paid whole, and
    /// a payment a device made already is left as it is.
    func testSeveralHouseholdsPaidTogether() throws {
        var households: [(id: String, child: String, schedules: [String], since: String)] = []
        for name in ["A", "B", "C"] {
            let hh = name == "A" ? h : s.household(owner, name: name)
            let child = name == "A" ? ada : s.child(owner, household: hh, name: "Kid \(name)")
            var schedules: [String] = []
            for i in 0..<3 {
                let r = s.addSchedule(owner, hh, child, ScheduleFixtures.allowance(Int64(100 + i), "weekly", from: "2026-12-04", zone: "UTC"))
                XCTAssertEqual(r.status, 201, "\(r.json)")
                schedules.append(r.json["id"]!.stringValue!)
            }
            households.append((hh, child, schedules, ""))
        }
        clock.set("2026-12-12T10:00:00Z")  // two Fridays each
        // A device paid B's first schedule's 2026-12-04 offline: the job leaves it.
        var record = SyncRecords.transaction(ScheduleFixtures.paymentId("allowance", households[1].schedules[0], "2026-12-04"),
                                             child: households[1].child, amount: 100,
                                             createdAt: Timestamp.parse("2026-12-04T00:00:00Z")!).objectValue!
        record["source"] = "allowance"
        XCTAssertEqual(s.pushResults(owner, households[1].id, transactions: [.object(record)]).first?["status"]?.stringValue, "saved")
        for i in households.indices {
            households[i].since = try XCTUnwrap(s.pull(owner, households[i].id).json["nextToken"]?.stringValue)
        }
        let postgres = TestServer.postgresURL != nil
        XCTAssertEqual(s.app.storage.householdsPerBackgroundWrite > 1, postgres)
        var pacing = ScheduleJob.Pacing()
        pacing.perWrite = 2  // each household's three schedules: a write of two and one of one
        pacing.requestsRecently = 0
        s.app.scheduleJob.pacing = pacing
        let before = commits()
        let report = s.payDue()
        XCTAssertEqual(report.payments, 3 * 3 * 2 - 1, "all but the device's")
        XCTAssertEqual(report.failed, 0)
        XCTAssertEqual(commits() - before, postgres ? 1 : 6, "six writes' worth: one transaction over PostgreSQL")
        XCTAssertEqual(s.payDue().payments, 0, "every date settled")
        for hh in households {
            XCTAssertEqual(s.balance(owner, hh.id, hh.child), 2 * (100 + 101 + 102))
            let expected = Set(hh.schedules.flatMap { id in ["2026-12-04", "2026-12-11"].map { ScheduleFixtures.paymentId("allowance", id, $0) } })
                .subtracting(hh.id == households[1].id ? [ScheduleFixtures.paymentId("allowance", hh.schedules[0], "2026-12-04")] : [])
            let page = s.pull(owner, hh.id, since: hh.since).json
            XCTAssertEqual(Set((page["transactions"]?.arrayValue ?? []).map { $0["id"]!.stringValue! }), expected)
            let next = try XCTUnwrap(page["nextToken"]?.stringValue)
            XCTAssertEqual(s.pull(owner, hh.id, since: next).json["transactions"]?.arrayValue?.count ?? 0, 0)
        }
    }

    /// A household that no longer exists, paid in one write with others, pays nothing and
    /// holds back none of the others.
    func testAHouseholdGoneMeanwhilePaysNothingBesideOthers() throws {
        let a = s.addSchedule(owner, h, ada, ScheduleFixtures.allowance(500, "weekly", from: "2026-12-04", zone: "UTC")).json["id"]!.stringValue!
        let gone = UUID().uuidString.lowercased(), goneSchedule = UUID().uuidString.lowercased()
        let now = Timestamp.parse("2026-12-12T10:00:00Z")!, h = self.h
        let paid = try s.app.storage.writeAndWait { w in
            try w.payDue(households: [(household: gone, schedules: [goneSchedule]), (household: h, schedules: [a])], now: now)
        }
        XCTAssertEqual(paid, 2)
        XCTAssertEqual(s.balance(owner, h, ada), 1000)
        clock.set("2026-12-12T10:00:00Z")
        XCTAssertEqual(s.payDue().payments, 0, "both dates settled")
    }

    /// Commits this server made so far (`kidledger_db_commits_total`).
    private func commits() -> Int {
        let m = String(decoding: s.call("GET", "/metrics").body, as: UTF8.self)
        return m.split(separator: "\n").first { $0.hasPrefix("kidledger_db_commits_total ") }
            .flatMap { Int($0.split(separator: " ")[1]) } ?? -1
    }

    private func t(_ schedule: String) -> JSONValue {
        s.call("GET", "/v1/households/\(h)/schedules/\(schedule)", token: owner).json
    }
}
