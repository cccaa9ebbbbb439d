import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import XCTest

/// Schedules over HTTP (both backends): the record, its validation and authorization, what
/// creating, editing, pausing and deleting pay, the job, and devices paying the same dates.
final class ScheduleTests: XCTestCase {
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

    func testRecordReadListEditDelete() throws {
        let id = SyncRecords.newId()
        let created = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(500, "weekly", from: "2026-12-04", zone: "Europe/Zurich",
                                                                            id: id, extra: ["note": "Pocket money"]))
        XCTAssertEqual(created.status, 201, String(decoding: created.body, as: UTF8.self))
        let j = created.json
        XCTAssertEqual(j["id"]?.stringValue, id)
        XCTAssertEqual(j["householdId"]?.stringValue, h)
        XCTAssertEqual(j["childId"]?.stringValue, kid)
        XCTAssertEqual(j["kind"]?.stringValue, "allowance")
        XCTAssertEqual(j["amountCents"]?.intValue, 500)
        XCTAssertEqual(j["rateBasisPoints"], .null)
        XCTAssertEqual(j["cadence"]?.stringValue, "weekly")
        XCTAssertEqual(j["firstDate"]?.stringValue, "2026-12-04")
        XCTAssertEqual(j["timeZone"]?.stringValue, "Europe/Zurich")
        XCTAssertEqual(j["endDate"], .null)
        XCTAssertEqual(j["paused"]?.boolValue, false)
        XCTAssertEqual(j["nextDueDate"]?.stringValue, "2026-12-04")
        XCTAssertEqual(j["modifiedBy"]?.stringValue, ownerId)
        XCTAssertEqual(j["catchUp"], .obj(["paid": 0, "skipped": 0, "dropped": 0]))
        let tag = try XCTUnwrap(j["changeTag"]?.stringValue)
        XCTAssertEqual(created.header("ETag"), "\"\(tag)\"")
        XCTAssertEqual(created.header("Location"), "/v1/households/\(h)/schedules/\(id)")

        // The same POST again: 200, nothing added; another schedule with the id: 409.
        let again = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(500, "weekly", from: "2026-12-04", zone: "Europe/Zurich",
                                                                          id: id, extra: ["note": "Pocket money"]))
        XCTAssertEqual(again.status, 200)
        XCTAssertEqual(again.json["changeTag"]?.stringValue, tag)
        let other = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(600, "weekly", from: "2026-12-04", zone: "Europe/Zurich", id: id))
        XCTAssertEqual(other.status, 409)
        XCTAssertEqual(other.code, "id_conflict")
        XCTAssertEqual(other.json["current"]?["amountCents"]?.intValue, 500)

        let got = s.call("GET", "/v1/households/\(h)/schedules/\(id)", token: owner)
        XCTAssertEqual(got.status, 200)
        XCTAssertEqual(got.json["note"]?.stringValue, "Pocket money")
        XCTAssertNil(got.json["catchUp"])

        // Paged list, oldest first.
        clock.set("2026-12-01T08:00:01Z")
        let second = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(100, "monthly", from: "2027-01-31", zone: "UTC"))
        XCTAssertEqual(second.status, 201)
        let page1 = s.call("GET", "/v1/households/\(h)/children/\(kid)/schedules?limit=1", token: owner)
        XCTAssertEqual(page1.json["items"]?.arrayValue?.map { $0["id"]!.stringValue! }, [id])
        let cursor = try XCTUnwrap(page1.json["nextCursor"]?.stringValue)
        let page2 = s.call("GET", "/v1/households/\(h)/children/\(kid)/schedules?limit=1&cursor=\(cursor)", token: owner)
        XCTAssertEqual(page2.json["items"]?.arrayValue?.map { $0["id"]!.stringValue! }, [second.json["id"]!.stringValue!])
        XCTAssertEqual(page2.json["nextCursor"], .null)

        // If-Match.
        let stale = s.call("PATCH", "/v1/households/\(h)/schedules/\(id)", token: owner, json: .obj(["amountCents": 700]),
                           headers: ["If-Match": "\"v0\""])
        XCTAssertEqual(stale.status, 412)
        XCTAssertEqual(stale.json["current"]?["amountCents"]?.intValue, 500)
        let edited = s.call("PATCH", "/v1/households/\(h)/schedules/\(id)", token: owner, json: .obj(["amountCents": 700]),
                            headers: ["If-Match": "\"\(tag)\""])
        XCTAssertEqual(edited.status, 200)
        XCTAssertEqual(edited.json["amountCents"]?.intValue, 700)
        XCTAssertNotEqual(edited.json["changeTag"]?.stringValue, tag)

        // Delete: gone from reads and lists, a tombstone in the feed.
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/schedules/\(id)", token: owner, headers: ["If-Match": "\"\(tag)\""]).status, 412)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/schedules/\(id)", token: owner).status, 204)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/schedules/\(id)", token: owner).status, 404)
        XCTAssertEqual(s.call("PATCH", "/v1/households/\(h)/schedules/\(id)", token: owner, json: .obj(["note": "x"])).status, 404)
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/schedules/\(id)", token: owner).status, 404)
        let listed = s.call("GET", "/v1/households/\(h)/children/\(kid)/schedules", token: owner)
        XCTAssertEqual(listed.json["items"]?.arrayValue?.count, 1)
        let feed = s.pull(owner, h)
        let inFeed = feed.json["schedules"]?.arrayValue ?? []
        XCTAssertEqual(inFeed.count, 2)
        XCTAssertEqual(inFeed.first { $0["id"]?.stringValue == id }?["deleted"]?.boolValue, true)
        XCTAssertEqual(inFeed.first { $0["id"]?.stringValue == id }?["nextDueDate"], .null)
        // A deleted schedule's id stays taken.
        XCTAssertEqual(s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(700, "weekly", from: "2026-12-04",
                                                                            zone: "Europe/Zurich", id: id)).status, 409)
    }

    func testFieldLevelValidation() {
        func fields(_ body: JSONValue) -> [String: String] {
            let r = s.addSchedule(owner, h, kid, body)
            XCTAssertEqual(r.status, 422, String(decoding: r.body, as: UTF8.self))
            XCTAssertEqual(r.code, "validation_failed")
            var out: [String: String] = [:]
            for (k, v) in r.json["fields"]?.objectValue?.pairs ?? [] { out[k] = v.stringValue }
            return out
        }
        XCTAssertEqual(Set(fields(.obj([:])).keys), ["kind", "cadence", "firstDate", "timeZone"])
        XCTAssertNotNil(fields(.obj(["kind": "allowance", "cadence": "weekly", "firstDate": "2027-01-01", "timeZone": "UTC"]))["amountCents"])
        XCTAssertNotNil(fields(.obj(["kind": "interest", "amountCents": 5, "rateBasisPoints": 100, "cadence": "weekly",
                                     "firstDate": "2027-01-01", "timeZone": "UTC"]))["amountCents"])
        XCTAssertNotNil(fields(.obj(["kind": "interest", "rateBasisPoints": 10_001, "cadence": "weekly",
                                     "firstDate": "2027-01-01", "timeZone": "UTC"]))["rateBasisPoints"])
        XCTAssertNotNil(fields(ScheduleFixtures.allowance(0, "weekly", from: "2027-01-01", zone: "UTC"))["amountCents"])
        XCTAssertNotNil(fields(ScheduleFixtures.allowance(-5, "weekly", from: "2027-01-01", zone: "UTC"))["amountCents"])
        XCTAssertNotNil(fields(ScheduleFixtures.allowance(5, "daily", from: "2027-01-01", zone: "UTC"))["cadence"])
        XCTAssertNotNil(fields(ScheduleFixtures.allowance(5, "weekly", from: "2027-02-30", zone: "UTC"))["firstDate"])
        XCTAssertEqual(fields(ScheduleFixtures.allowance(5, "weekly", from: "2027-01-01", zone: "CET"))["timeZone"],
                       "unknown time zone \"CET\": must be an IANA name such as Europe/Zurich, or UTC")
        XCTAssertNotNil(fields(ScheduleFixtures.allowance(5, "weekly", from: "2027-01-01", zone: "UTC",
                                                          extra: ["endDate": "2026-12-31"]))["endDate"])
        XCTAssertNotNil(fields(ScheduleFixtures.allowance(5, "weekly", from: "2027-01-01", zone: "UTC",
                                                          extra: ["split": .array([])]))["split"])
        XCTAssertNotNil(fields(ScheduleFixtures.allowance(5, "weekly", from: "2027-01-01", zone: "UTC",
                                                          extra: ["colour": "red"]))["colour"])
        // A PATCH is checked against the stored kind.
        let id = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(5, "weekly", from: "2027-01-01", zone: "UTC")).json["id"]!.stringValue!
        let r = s.call("PATCH", "/v1/households/\(h)/schedules/\(id)", token: owner, json: .obj(["rateBasisPoints": 100]))
        XCTAssertEqual(r.status, 422)
        XCTAssertNotNil(r.json["fields"]?["rateBasisPoints"])
        let end = s.call("PATCH", "/v1/households/\(h)/schedules/\(id)", token: owner, json: .obj(["endDate": "2026-01-01"]))
        XCTAssertEqual(end.status, 422)
        // A client never writes interest: the server computes it.
        let t = s.call("POST", "/v1/households/\(h)/children/\(kid)/transactions", token: owner,
                       json: .obj(["amountCents": 5, "source": "interest"]))
        XCTAssertEqual(t.status, 422)
        XCTAssertNotNil(t.json["fields"]?["source"])
    }

    /// Other households' schedule ids are 404, whoever asks; a child of another household too.
    func testOtherHouseholdsSchedulesAreNotFound() {
        let theirs = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(5, "weekly", from: "2027-01-01", zone: "UTC")).json["id"]!.stringValue!
        let (_, other) = s.signup("neighbour")
        let oh = s.household(other), okid = s.child(other, household: oh)
        for (m, p) in [("GET", "/v1/households/\(oh)/schedules/\(theirs)"), ("PATCH", "/v1/households/\(oh)/schedules/\(theirs)"),
                       ("DELETE", "/v1/households/\(oh)/schedules/\(theirs)"), ("GET", "/v1/households/\(h)/schedules/\(theirs)"),
                       ("GET", "/v1/households/\(oh)/children/\(kid)/schedules")] {
            let r = s.call(m, p, token: other, json: m == "PATCH" ? .obj(["note": "mine"]) : nil)
            XCTAssertEqual(r.status, 404, "\(m) \(p)")
        }
        XCTAssertEqual(s.addSchedule(other, oh, kid, ScheduleFixtures.allowance(5, "weekly", from: "2027-01-01", zone: "UTC")).status, 404)
        XCTAssertEqual(s.addSchedule(other, oh, okid, ScheduleFixtures.allowance(5, "weekly", from: "2027-01-01", zone: "UTC")).status, 201)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/schedules/\(theirs)", token: owner).json["note"]?.stringValue, "")
    }

    /// A first date in the past pays the dates due once, at their due instants, with the
    /// deterministic ids; far in the past, at most 366 and the answer says so.
    func testPastFirstDatePaysMissedPeriodsOnce() {
        clock.set("2026-12-20T09:00:00Z")
        let id = "0f5a3c1e-7b2d-4e8f-9a6c-1d2e3f4a5b6c"
        let r = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(500, "weekly", from: "2026-12-04", zone: "Europe/Zurich", id: id))
        XCTAssertEqual(r.status, 201)
        XCTAssertEqual(r.json["catchUp"], .obj(["paid": 3, "skipped": 0, "dropped": 0]))
        XCTAssertEqual(r.json["nextDueDate"]?.stringValue, "2026-12-25")
        let txs = s.transactions(owner, h, kid)
        XCTAssertEqual(txs.map { $0["id"]!.stringValue! }, ["2026-12-18", "2026-12-11", "2026-12-04"].map {
            ScheduleFixtures.paymentId("allowance", id, $0)
        })
        XCTAssertEqual(txs.last?["id"]?.stringValue, "65fa6f96-76c4-578c-9595-c0882e331698", "the vector of docs/allowance.md")
        XCTAssertEqual(txs.last?["createdAt"]?.stringValue, "2026-12-03T23:00:00.000Z")
        XCTAssertEqual(Set(txs.map { $0["source"]!.stringValue! }), ["allowance"])
        XCTAssertEqual(s.balance(owner, h, kid), 1500)
        XCTAssertEqual(s.payDue().payments, 0, "nothing else is due")

        // Twenty years of weeks: the latest 366 are paid, the rest dropped and said.
        let old = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(1, "weekly", from: "2006-12-01", zone: "UTC"))
        XCTAssertEqual(old.json["catchUp"]?["paid"]?.intValue, 366)
        // 2006-12-01 to 2026-12-20 is 7324 days: 1047 weekly dates, the latest 366 paid.
        XCTAssertEqual(old.json["catchUp"]?["dropped"]?.intValue, 1047 - 366)
        XCTAssertEqual(s.payDue().payments, 0)
        XCTAssertEqual(s.balance(owner, h, kid), 1500 + 366)
    }

    /// The job pays what falls due, never before its due instant, once however often it
    /// runs, and its payments reach the feed like any write.
    func testJobPaysDueDatesOnceAtTheirInstant() {
        let id = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(500, "weekly", from: "2026-12-04",
                                                                     zone: "America/New_York")).json["id"]!.stringValue!
        let start = s.pull(owner, h).json["nextToken"]!.stringValue!
        clock.set("2026-12-04T04:59:59.999Z")  // 23:59:59.999 on the 3rd in New York
        XCTAssertEqual(s.payDue().payments, 0)
        clock.set("2026-12-04T05:00:00Z")
        XCTAssertEqual(s.payDue().payments, 1)
        XCTAssertEqual(s.payDue().payments, 0)
        let feed = s.pull(owner, h, since: start)
        XCTAssertEqual(feed.json["transactions"]?.arrayValue?.map { $0["id"]!.stringValue! },
                       [ScheduleFixtures.paymentId("allowance", id, "2026-12-04")])
        XCTAssertEqual(feed.json["transactions"]?.arrayValue?.first?["createdAt"]?.stringValue, "2026-12-04T05:00:00.000Z")
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/schedules/\(id)", token: owner).json["nextDueDate"]?.stringValue, "2026-12-11")
        // Six weeks later, one run pays the six dates missed.
        clock.set("2027-01-16T12:00:00Z")
        XCTAssertEqual(s.payDue().payments, 6)
        XCTAssertEqual(s.balance(owner, h, kid), 3500)
    }

    /// A device that paid a date offline and the server's job write one transaction; an
    /// undone payment stays undone whoever runs later.
    func testDevicePaymentsAndUndoAreNeverPaidAgain() {
        let id = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(500, "weekly", from: "2026-12-04", zone: "UTC")).json["id"]!.stringValue!
        clock.set("2026-12-11T10:00:00Z")
        // The device pays 2026-12-04 with the server's id, offline, then uploads it.
        let paid = ScheduleFixtures.paymentId("allowance", id, "2026-12-04")
        var record = SyncRecords.transaction(paid, child: kid, amount: 500, createdAt: Timestamp.parse("2026-12-04T00:00:00Z")!).objectValue!
        record["source"] = "allowance"
        XCTAssertEqual(s.pushResults(owner, h, transactions: [.object(record)]).first?["status"]?.stringValue, "saved")
        XCTAssertEqual(s.payDue().payments, 1, "2026-12-11 only")
        XCTAssertEqual(s.pushResults(owner, h, transactions: [.object(record)]).first?["status"]?.stringValue, "unchanged")
        XCTAssertEqual(s.balance(owner, h, kid), 1000)

        // Undo 2026-12-11's payment; the job and a device paying it again change nothing.
        let second = ScheduleFixtures.paymentId("allowance", id, "2026-12-11")
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/transactions/\(second)/reversal", token: owner).status, 201)
        XCTAssertEqual(s.balance(owner, h, kid), 500)
        clock.set("2026-12-12T10:00:00Z")
        XCTAssertEqual(s.payDue().payments, 0)
        var again = record
        again["id"] = .string(second)
        again["createdAt"] = "2026-12-11T00:00:00Z"
        XCTAssertEqual(s.pushResults(owner, h, transactions: [.object(again)]).first?["status"]?.stringValue, "unchanged")
        // Even a schedule deleted and its dates asked for again by a new edit: still undone.
        XCTAssertEqual(s.balance(owner, h, kid), 500)
        XCTAssertEqual(s.transactions(owner, h, kid).count, 3)
    }

    /// docs/allowance.md's worked example, replayed through the server: the job at 07:00
    /// Zurich time each Friday, a pause, a resume with a new amount — both ways.
    func testWorkedExample() {
        for backPay in [false, true] {
            let kid = s.child(owner, household: h, name: backPay ? "With back pay" : "Without")
            clock.set("2026-12-01T08:00:00Z")  // Tue 09:00 in Zurich
            let id = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(500, "weekly", from: "2026-12-04",
                                                                         zone: "Europe/Zurich")).json["id"]!.stringValue!
            for day in ["2026-12-04", "2026-12-11", "2026-12-18"] {
                clock.set(day + "T06:00:00Z")
                XCTAssertEqual(s.payDue().payments, 1, day)
            }
            clock.set("2026-12-20T17:00:00Z")
            let paused = s.call("PATCH", "/v1/households/\(h)/schedules/\(id)", token: owner, json: .obj(["paused": true]))
            XCTAssertEqual(paused.json["catchUp"], .obj(["paid": 0, "skipped": 0, "dropped": 0]))
            XCTAssertEqual(paused.json["nextDueDate"], .null)
            for day in ["2026-12-25", "2027-01-01"] {
                clock.set(day + "T06:00:00Z")
                XCTAssertEqual(s.payDue().payments, 0, day)
            }
            clock.set("2027-01-03T17:00:00Z")
            let resumed = s.call("PATCH", "/v1/households/\(h)/schedules/\(id)", token: owner,
                                 json: .obj(["paused": false, "amountCents": 600, "backPay": .bool(backPay)]))
            XCTAssertEqual(resumed.status, 200)
            XCTAssertEqual(resumed.json["catchUp"], backPay ? .obj(["paid": 2, "skipped": 0, "dropped": 0])
                                                            : .obj(["paid": 0, "skipped": 2, "dropped": 0]))
            for day in ["2027-01-08", "2027-01-15"] {
                clock.set(day + "T06:00:00Z")
                XCTAssertEqual(s.payDue().payments, 1, day)
            }
            XCTAssertEqual(s.balance(owner, h, kid), backPay ? 3900 : 2700)
            XCTAssertEqual(s.call("GET", "/v1/households/\(h)/schedules/\(id)", token: owner).json["nextDueDate"]?.stringValue, "2027-01-22")
            let newest = s.transactions(owner, h, kid).first
            XCTAssertEqual(newest?["createdAt"]?.stringValue, "2027-01-14T23:00:00.000Z")
        }
    }

    /// Deleting pays what is due at that instant and nothing after; paid periods stay.
    func testDeleteStopsFuturePaymentsAndKeepsPaidOnes() throws {
        let id = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(250, "everyTwoWeeks", from: "2026-12-02", zone: "UTC")).json["id"]!.stringValue!
        clock.set("2026-12-03T00:00:00Z")
        XCTAssertEqual(s.payDue().payments, 1)
        clock.set("2026-12-17T00:00:00Z")  // 2026-12-16 due, not paid by the job yet
        XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/schedules/\(id)", token: owner).status, 204)
        XCTAssertEqual(s.balance(owner, h, kid), 500)
        clock.set("2027-06-01T00:00:00Z")
        XCTAssertEqual(s.payDue().payments, 0)
        XCTAssertEqual(s.balance(owner, h, kid), 500)

        // `check` reads every schedule: this one is fine; a wrong due instant is reported.
        let live = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(5, "weekly", from: "2027-07-01", zone: "UTC")).json["id"]!.stringValue!
        XCTAssertEqual(try s.check().problems, [])
        try s.execute("UPDATE schedules SET due_at = 0 WHERE id = ?", [.text(live)],
                      postgres: "UPDATE schedules SET due_at = to_timestamp(0) WHERE id = $1::uuid")
        XCTAssertEqual(try s.check().problems.count, 1)
        XCTAssertTrue(try s.check().problems.first?.hasPrefix("schedule: \(live) is indexed as due at 1970-01-01T00:00:00.000Z") == true)
    }

    /// Monthly on the 31st pays the last day of shorter months; a DST change neither skips
    /// nor doubles a day.
    func testMonthEndsAndDaylightSaving() {
        clock.set("2027-05-01T12:00:00Z")
        let id = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(100, "monthly", from: "2027-01-31",
                                                                     zone: "Europe/Berlin")).json["id"]!.stringValue!
        let dates = ["2027-04-30", "2027-03-31", "2027-02-28", "2027-01-31"]
        XCTAssertEqual(s.transactions(owner, h, kid).map { $0["id"]!.stringValue! }, dates.map { ScheduleFixtures.paymentId("allowance", id, $0) })
        // Berlin changed to summer time on 2027-03-28: March 31 began at 22:00Z the day before.
        XCTAssertEqual(s.transactions(owner, h, kid).map { $0["createdAt"]!.stringValue! },
                       ["2027-04-29T22:00:00.000Z", "2027-03-30T22:00:00.000Z", "2027-02-27T23:00:00.000Z", "2027-01-30T23:00:00.000Z"])
        // Havana springs forward at midnight: 2026-03-08 begins at 01:00 local, 05:00Z.
        let havana = s.child(owner, household: h, name: "Havana")
        clock.set("2026-03-08T04:59:00Z")
        let weekly = s.addSchedule(owner, h, havana, ScheduleFixtures.allowance(100, "weekly", from: "2026-03-01", zone: "America/Havana"))
        XCTAssertEqual(weekly.json["catchUp"]?["paid"]?.intValue, 1)
        XCTAssertEqual(s.payDue().payments, 0)
        clock.set("2026-03-08T05:00:00Z")
        XCTAssertEqual(s.payDue().payments, 1)
        XCTAssertEqual(s.transactions(owner, h, havana).first?["createdAt"]?.stringValue, "2026-03-08T05:00:00.000Z")
    }

    /// Interest: the rate of the positive balance at the due instant (transactions created
    /// before it), rounded down to a cent; nothing on a balance of zero or below.
    func testInterestOnTheBalanceAtTheDueInstant() {
        clock.set("2026-11-30T12:00:00Z")
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(kid)/transactions", token: owner,
                              json: .obj(["amountCents": 1234, "createdAt": "2026-11-30T12:00:00Z"])).status, 201)
        let r = s.addSchedule(owner, h, kid, .obj(["kind": "interest", "rateBasisPoints": 100, "cadence": "monthly",
                                                   "firstDate": "2026-12-01", "timeZone": "UTC"]))
        XCTAssertEqual(r.status, 201)
        XCTAssertEqual(r.json["amountCents"], .null)
        XCTAssertEqual(r.json["rateBasisPoints"]?.intValue, 100)
        let id = r.json["id"]!.stringValue!
        // Spent after the due instant: not in the balance interest reads.
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(kid)/transactions", token: owner,
                              json: .obj(["amountCents": -1000, "createdAt": "2026-12-01T00:00:00Z"])).status, 201)
        clock.set("2026-12-01T00:00:00Z")
        XCTAssertEqual(s.payDue().payments, 1)
        let paid = s.transactions(owner, h, kid).first { $0["source"]?.stringValue == "interest" }
        XCTAssertEqual(paid?["id"]?.stringValue, ScheduleFixtures.paymentId("interest", id, "2026-12-01"))
        XCTAssertEqual(paid?["amountCents"]?.intValue, 12)  // ⌊1234 × 100 / 10000⌋
        XCTAssertEqual(paid?["createdAt"]?.stringValue, "2026-12-01T00:00:00.000Z")
        // 1234 − 1000 + 12 = 246 → 2 cents on January 1; then spend it all: nothing in February.
        clock.set("2027-01-01T00:00:00Z")
        XCTAssertEqual(s.payDue().payments, 1)
        XCTAssertEqual(s.balance(owner, h, kid), 248)
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/children/\(kid)/transactions", token: owner,
                              json: .obj(["amountCents": -300, "createdAt": "2027-01-02T00:00:00Z"])).status, 201)
        clock.set("2027-02-01T00:00:00Z")
        XCTAssertEqual(s.payDue().payments, 0)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/schedules/\(id)", token: owner).json["nextDueDate"]?.stringValue, "2027-03-01")
    }

    /// A device pushes schedules: new (paying what is due), the same again, an edit on the
    /// current tag, a stale one (conflict), another member's name (refused), a deletion.
    func testSyncPushOfSchedules() throws {
        clock.set("2026-12-12T10:00:00Z")
        let id = SyncRecords.newId()
        func record(_ extra: [String: JSONValue] = [:]) -> JSONValue {
            var o = ScheduleFixtures.allowance(300, "weekly", from: "2026-12-04", zone: "UTC", id: id).objectValue!
            o["childId"] = .string(kid)
            o["createdAt"] = "2026-12-01T10:00:00Z"
            o["modifiedAt"] = "2026-12-01T10:00:00Z"
            o["modifiedBy"] = .string(ownerId)
            for (k, v) in extra { o[k] = v }
            return .object(o)
        }
        func push(_ r: JSONValue) -> JSONValue {
            let reply = s.call("POST", "/v1/households/\(h)/changes", token: owner, json: .obj(["schedules": .array([r])]))
            XCTAssertEqual(reply.status, 200, String(decoding: reply.body, as: UTF8.self))
            return reply.json["results"]?.arrayValue?.first ?? .null
        }
        let saved = push(record())
        XCTAssertEqual(saved["type"]?.stringValue, "schedule")
        XCTAssertEqual(saved["status"]?.stringValue, "saved")
        let tag = try XCTUnwrap(saved["changeTag"]?.stringValue)
        XCTAssertEqual(s.balance(owner, h, kid), 600, "2026-12-04 and 2026-12-11 paid with the creation")
        XCTAssertEqual(push(record())["status"]?.stringValue, "unchanged")
        let stale = push(record(["amountCents": 400, "baseChangeTag": "v1", "modifiedAt": "2026-12-12T09:00:00Z"]))
        XCTAssertEqual(stale["status"]?.stringValue, "conflict")
        XCTAssertEqual(stale["serverRecord"]?["amountCents"]?.intValue, 300)
        let forged = push(record(["modifiedBy": .string(SyncRecords.newId())]))
        XCTAssertEqual(forged["code"]?.stringValue, "modified_by_mismatch")
        let invalid = push(record(["timeZone": "PST"]))
        XCTAssertEqual(invalid["code"]?.stringValue, "validation_failed")
        XCTAssertNotNil(invalid["fields"]?["timeZone"])
        let edit = push(record(["amountCents": 400, "baseChangeTag": .string(tag), "modifiedAt": "2026-12-12T09:00:00Z"]))
        XCTAssertEqual(edit["status"]?.stringValue, "saved")
        let got = s.call("GET", "/v1/households/\(h)/schedules/\(id)", token: owner).json
        XCTAssertEqual(got["amountCents"]?.intValue, 400)
        XCTAssertEqual(got["modifiedAt"]?.stringValue, "2026-12-12T09:00:00.000Z")
        clock.set("2026-12-18T00:00:00Z")
        XCTAssertEqual(s.payDue().payments, 1)
        XCTAssertEqual(s.balance(owner, h, kid), 1000)
        let removed = push(record(["amountCents": 400, "deleted": true, "baseChangeTag": got["changeTag"]!,
                                   "modifiedAt": "2026-12-18T00:00:01Z"]))
        XCTAssertEqual(removed["status"]?.stringValue, "saved")
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/schedules/\(id)", token: owner).status, 404)
        clock.set("2027-01-18T00:00:00Z")
        XCTAssertEqual(s.payDue().payments, 0)
        // Unknown child: rejected.
        var orphan = record().objectValue!
        orphan["id"] = .string(SyncRecords.newId())
        orphan["childId"] = .string(SyncRecords.newId())
        XCTAssertEqual(push(.object(orphan))["code"]?.stringValue, "unknown_child")
    }

    /// Several payers at once — two runs of the job (over PostgreSQL, of two server
    /// processes) and a device pushing the same payments — write each payment once.
    func testConcurrentPayersPayEachDateOnce() throws {
        var ids: [String] = []
        for i in 0..<12 {
            ids.append(s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(Int64(100 + i), "weekly", from: "2026-12-04",
                                                                            zone: "Europe/Zurich")).json["id"]!.stringValue!)
        }
        var jobs = [s.app.scheduleJob]
        var second: LedgerApp?
        if TestServer.postgresURL != nil {
            // Another process over the same database; its own job runs at its start too.
            let other = try LedgerApp(configuration: s.app.configuration)
            try other.start()
            second = other
            jobs.append(other.scheduleJob)
        }
        defer { second?.stop() }
        clock.set("2027-03-01T12:00:00Z")  // 13 Fridays due on each
        let dates = (0..<13).map { LocalDate("2026-12-04")!.adding(days: 7 * $0)!.description }
        let device: [JSONValue] = ids.enumerated().flatMap { i, id in
            dates.map { d -> JSONValue in
                let due = try! ScheduleTimeZone(identifier: "Europe/Zurich").startOfDayMs(LocalDate(d)!)
                return .obj(["id": .string(ScheduleFixtures.paymentId("allowance", id, d)), "childId": .string(kid),
                             "amountCents": .int(Int64(100 + i)), "note": "", "source": "allowance",
                             "createdAt": .string(Timestamp.format(ms: due))])
            }
        }
        let statuses = Locked<[String]>([])
        let (server, household, token, payers) = (s!, h, owner, jobs)
        DispatchQueue.concurrentPerform(iterations: 4) { k in
            switch k {
            case 0, 1: payers[k % payers.count].run()
            case 2:
                let r = server.call("POST", "/v1/households/\(household)/changes", token: token,
                                    json: .obj(["transactions": .array(device)]))
                statuses.withLock { $0 += (r.json["results"]?.arrayValue ?? []).map { $0["status"]?.stringValue ?? "" } }
            default: payers.last!.run()
            }
        }
        XCTAssertEqual(statuses.withLock { $0.count }, 12 * 13)
        XCTAssertTrue(statuses.withLock { $0.allSatisfy { $0 == "saved" || $0 == "unchanged" } })
        let txs = s.transactions(owner, h, kid)
        XCTAssertEqual(txs.count, 12 * 13)
        XCTAssertEqual(Set(txs.map { $0["id"]!.stringValue! }).count, 12 * 13)
        XCTAssertEqual(s.balance(owner, h, kid), 13 * (0..<12).reduce(Int64(0)) { $0 + 100 + Int64($1) })
        XCTAssertEqual(s.payDue().payments, 0)
    }

    /// A child holds at most `maxSchedulesPerChild` schedules; deleted ones do not count.
    func testSchedulesPerChildAreCapped() throws {
        let clock = self.clock!
        let capped = try TestServer { c in
            c.clock = { clock.now() }
            c.scheduleJobInterval = 0
            c.maxSchedulesPerChild = 2
        }
        defer { capped.stop() }
        let (_, t) = capped.signup("dad")
        let hh = capped.household(t), k = capped.child(t, household: hh)
        let first = capped.addSchedule(t, hh, k, ScheduleFixtures.allowance(5, "weekly", from: "2027-01-01", zone: "UTC"))
        XCTAssertEqual(capped.addSchedule(t, hh, k, ScheduleFixtures.allowance(6, "weekly", from: "2027-01-01", zone: "UTC")).status, 201)
        let third = capped.addSchedule(t, hh, k, ScheduleFixtures.allowance(7, "weekly", from: "2027-01-01", zone: "UTC"))
        XCTAssertEqual(third.status, 409)
        XCTAssertEqual(third.code, "too_many_schedules")
        XCTAssertEqual(third.json["limit"]?.intValue, 2)
        XCTAssertEqual(capped.call("DELETE", "/v1/households/\(hh)/schedules/\(first.json["id"]!.stringValue!)", token: t).status, 204)
        XCTAssertEqual(capped.addSchedule(t, hh, k, ScheduleFixtures.allowance(7, "weekly", from: "2027-01-01", zone: "UTC")).status, 201)
    }

    /// A read-only participant reads schedules but cannot write them.
    func testReadOnlyParticipantCannotWrite() {
        let id = s.addSchedule(owner, h, kid, ScheduleFixtures.allowance(5, "weekly", from: "2027-01-01", zone: "UTC")).json["id"]!.stringValue!
        let viewer = s.signup("grandpa")
        _ = s.call("POST", "/v1/households/\(h)/share", token: owner)
        let inv = s.call("POST", "/v1/households/\(h)/share/participants", token: owner,
                         json: .obj(["handle": "grandpa", "permission": "readOnly"])).json["invitationId"]!.stringValue!
        XCTAssertEqual(s.call("POST", "/v1/invitations/\(inv)/accept", token: viewer.token).status, 200)
        XCTAssertEqual(s.call("GET", "/v1/households/\(h)/schedules/\(id)", token: viewer.token).status, 200)
        let r = s.call("PATCH", "/v1/households/\(h)/schedules/\(id)", token: viewer.token, json: .obj(["paused": true]))
        XCTAssertEqual(r.status, 403)
        XCTAssertEqual(r.code, "read_only")
        let record: JSONValue = .obj(["id": .string(id), "childId": .string(kid), "kind": "allowance", "amountCents": 5,
                                      "cadence": "weekly", "firstDate": "2027-01-01", "timeZone": "UTC", "paused": true,
                                      "createdAt": "2026-12-01T08:00:00Z", "modifiedAt": "2026-12-01T08:00:00Z",
                                      "modifiedBy": .string(viewer.id)])
        XCTAssertEqual(s.call("POST", "/v1/households/\(h)/changes", token: viewer.token,
                              json: .obj(["schedules": .array([record])])).status, 403)
    }
}
