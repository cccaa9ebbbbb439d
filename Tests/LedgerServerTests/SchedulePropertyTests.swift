import Foundation
import LedgerServerTesting
import LedgerClientTesting
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import XCTest

/// Random schedules in zones with DST changes and month ends, random edits, pauses (with and
/// without back pay), deletions and undos, paid by the server's job and by a device paying
/// the same dates at the same time, across server restarts (both backends): every date due
/// is paid exactly once, with its id, created at its due instant and never written before
/// it; no date that is not due; an undone payment stays undone; balances equal sums. Some
/// schedules split their payments across two pots of the child (paid by the server only): each
/// part is its own transaction with its own id, in its pot, and the pots add up to the balance.
///
/// The expected dates come from a model that replays the same changes through
/// `ScheduleState` at the same instants (the calendar's own tests check `ScheduleState`).
final class SchedulePropertyTests: XCTestCase {
    /// A seeded generator: the same run for a seed.
    struct Random {
        var generator: SeededGenerator
        init(state: UInt64) { generator = SeededGenerator(seed: state) }
        mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &generator) }
        mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }
        mutating func pick<T>(_ items: [T]) -> T { items[int(0...(items.count - 1))] }
    }

    /// What the model knows of one schedule.
    struct Model {
        var id: String
        var child: String
        var amount: Int64
        var state: ScheduleState
        var deleted = false
        /// The pots its payments are split across, in order (nil: unsplit).
        var split: [String]?
        /// Dates that must have a payment.
        var paid: Set<LocalDate> = []
    }

    static let zones = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "America/Havana", "Pacific/Apia"]

    func testEveryDueDateIsPaidExactlyOnce() throws {
        for seed: UInt64 in [1, 2] { try run(seed: seed) }
    }

    func run(seed: UInt64) throws {
        var rng = Random(state: seed)
        // Over March and early April 2027: New York (03-14), Havana (03-14), Berlin (03-28) and
        // Lord Howe (04-04, half an hour) change their clocks; March 31 and April 30 end months.
        let clock = TestClock("2027-03-01T00:00:00Z")
        let s = try TestServer.scheduled(clock)
        defer { s.stop() }
        let (ownerId, owner) = s.signup("mum\(seed)")
        let h = s.household(owner)
        let kids = [s.child(owner, household: h, name: "Ada"), s.child(owner, household: h, name: "Bo")]
        // Each child's default pot and a second pot, for split schedules.
        var pots: [String: [String]] = [:]
        for kid in kids {
            let save = s.call("POST", "/v1/households/\(h)/children/\(kid)/pots", token: owner, json: .obj(["name": "Save"]))
            pots[kid] = [PotTests.defaultPot(kid), save.json["id"]!.stringValue!]
        }
        var models: [Model] = []
        var undone: Set<String> = []

        func create() throws {
            let zone = rng.pick(Self.zones)
            let cadence = rng.pick(["weekly", "everyTwoWeeks", "monthly"])
            // First dates around now, month ends and DST weeks among them; some in the past.
            let now = clock.now()
            let base = try ScheduleTimeZone(identifier: zone).localDate(atMs: now)
            let first = rng.chance(30) ? LocalDate(year: base.year, month: base.month, day: rng.pick([29, 30, 31]))
                ?? base : base.adding(days: rng.int(-40...30))!
            let child = rng.pick(kids)
            // A split part is at least 1 % of at least 1.00: never zero, so every part is written.
            let split: [String]? = rng.chance(50) ? (rng.chance(50) ? pots[child]! : pots[child]!.reversed()) : nil
            let amount = Int64(rng.int(split == nil ? 1...2000 : 100...2000))
            var fields = ScheduleFixtures.allowance(amount, cadence, from: first.description, zone: zone).objectValue!
            if rng.chance(20) { fields["endDate"] = .string(first.adding(days: rng.int(20...90))!.description) }
            if let split {
                let percent = rng.int(1...99)
                fields["split"] = .array([.obj(["potId": .string(split[0]), "percent": .int(Int64(percent))]),
                                          .obj(["potId": .string(split[1]), "percent": .int(Int64(100 - percent))])])
            }
            let r = s.addSchedule(owner, h, child, .object(fields))
            XCTAssertEqual(r.status, 201, String(decoding: r.body, as: UTF8.self))
            let terms = ScheduleTerms(firstDate: first, cadence: ScheduleCadence(rawValue: cadence)!,
                                      timeZone: try ScheduleTimeZone(identifier: zone),
                                      endDate: fields["endDate"]?.stringValue.flatMap(LocalDate.init))
            let change = ScheduleState.created(terms, atMs: now)
            var m = Model(id: r.json["id"]!.stringValue!, child: child, amount: amount, state: change.state, split: split)
            m.paid.formUnion(change.payWithNewTerms)
            XCTAssertEqual(r.json["catchUp"]?["paid"]?.intValue, Int64(change.payWithNewTerms.count), "seed \(seed)")
            models.append(m)
        }

        func edit(_ i: Int) {
            var m = models[i]
            let now = clock.now()
            var terms = m.state.terms
            var body = JSONObject()
            let backPay = rng.chance(40)
            switch rng.int(0...3) {
            case 0, 1:
                terms.paused.toggle()
                body["paused"] = .bool(terms.paused)
            case 2:
                m.amount = Int64(rng.int(m.split == nil ? 1...2000 : 100...2000))
                body["amountCents"] = .int(m.amount)
            default:
                terms.cadence = rng.pick([.weekly, .everyTwoWeeks, .monthly])
                body["cadence"] = .string(terms.cadence.rawValue)
            }
            body["backPay"] = .bool(backPay)
            let r = s.call("PATCH", "/v1/households/\(h)/schedules/\(m.id)", token: owner, json: .object(body))
            XCTAssertEqual(r.status, 200, String(decoding: r.body, as: UTF8.self))
            let change = m.state.edited(to: terms, atMs: now, backPay: backPay)
            m.paid.formUnion(change.payWithPreviousTerms)
            m.paid.formUnion(change.payWithNewTerms)
            m.state = change.state
            XCTAssertEqual(r.json["catchUp"]?["paid"]?.intValue,
                           Int64(Set(change.payWithPreviousTerms + change.payWithNewTerms).subtracting(models[i].paid).count),
                           "seed \(seed): \(body)")
            models[i] = m
        }

        func delete(_ i: Int) {
            let change = models[i].state.deleted(atMs: clock.now())
            XCTAssertEqual(s.call("DELETE", "/v1/households/\(h)/schedules/\(models[i].id)", token: owner).status, 204)
            models[i].paid.formUnion(change.payWithPreviousTerms)
            models[i].state = change.state
            models[i].deleted = true
        }

        /// A device that read the schedules pays what is due on them, as the server would.
        func devicePays() -> [JSONValue] {
            var records: [JSONValue] = []
            let now = clock.now()
            for kid in kids {
                let list = s.call("GET", "/v1/households/\(h)/children/\(kid)/schedules?limit=1000", token: owner).json
                for sch in list["items"]?.arrayValue ?? [] {
                    // Split schedules are the server's to pay.
                    guard sch["split"] == .null, let next = sch["nextDueDate"]?.stringValue.flatMap(LocalDate.init),
                          let zone = try? ScheduleTimeZone(identifier: sch["timeZone"]!.stringValue!) else { continue }
                    let terms = ScheduleTerms(firstDate: LocalDate(sch["firstDate"]!.stringValue!)!,
                                              cadence: ScheduleCadence(rawValue: sch["cadence"]!.stringValue!)!, timeZone: zone,
                                              endDate: sch["endDate"]?.stringValue.flatMap(LocalDate.init))
                    let id = sch["id"]!.stringValue!
                    for date in ScheduleState(terms: terms, termsFrom: next).plan(atMs: now).pay {
                        records.append(.obj(["id": .string(ScheduleFixtures.paymentId("allowance", id, date.description)),
                                             "childId": .string(kid), "amountCents": sch["amountCents"]!, "note": sch["note"]!,
                                             "source": "allowance", "createdAt": .string(Timestamp.format(ms: terms.dueInstantMs(date)))]))
                    }
                }
            }
            return records
        }

        for _ in 0..<4 { try create() }
        for round in 0..<24 {
            // Time moves on by hours to days, crossing midnights, month ends and DST changes.
            clock.set(Timestamp.format(ms: clock.now() + Int64(rng.int(3...80)) * 3_600_000))
            let now = clock.now()
            if rng.chance(25) { try create() }
            for i in models.indices where !models[i].deleted {
                if rng.chance(20) { edit(i) } else if rng.chance(4) { delete(i) }
            }
            // The device reads what to pay, then it and the job pay at once.
            let device = devicePays()
            let results = Locked<[JSONValue]>([])
            DispatchQueue.concurrentPerform(iterations: 2) { k in
                if k == 0 {
                    s.payDue()
                } else if !device.isEmpty {
                    let r = s.call("POST", "/v1/households/\(h)/changes", token: owner, json: .obj(["transactions": .array(device)]))
                    results.withLock { $0 = r.json["results"]?.arrayValue ?? [] }
                }
            }
            for r in results.withLock({ $0 }) {
                XCTAssertTrue(["saved", "unchanged"].contains(r["status"]?.stringValue ?? ""), "seed \(seed) round \(round): \(r)")
            }
            for i in models.indices where !models[i].deleted {
                let plan = models[i].state.plan(atMs: now)
                models[i].paid.formUnion(plan.pay)
                models[i].state = models[i].state.settled(by: plan)
            }
            // Undo one payment now and then: it must stay undone.
            if rng.chance(30) {
                let txs = s.transactions(owner, h, rng.pick(kids)).filter {
                    $0["source"]?.stringValue == "allowance" && $0["reversesId"] == .null && $0["reversedById"] == .null
                }
                if !txs.isEmpty {
                    let t = rng.pick(txs)["id"]!.stringValue!
                    XCTAssertEqual(s.call("POST", "/v1/households/\(h)/transactions/\(t)/reversal", token: owner).status, 201)
                    undone.insert(t)
                }
            }
            if round % 8 == 7 {
                try s.restart()
                // The job's run at start reads the clock when it begins: moved on by the next
                // round first, it would pay dates the model gives to that round's edits.
                s.app.scheduleJob.waitForStartupRun()
            }
            try check(s, owner: owner, household: h, kids: kids, models: models, undone: undone, ownerId: ownerId,
                      context: "seed \(seed) round \(round)")
        }
        XCTAssertTrue(models.contains { $0.split != nil && !$0.paid.isEmpty }, "seed \(seed): no split schedule paid anything")
    }

    func check(_ s: TestServer, owner: String, household h: String, kids: [String], models: [Model], undone: Set<String>,
               ownerId: String, context: String) throws {
        var expected: [String: (model: Model, date: LocalDate, pot: String)] = [:]
        for m in models {
            for d in m.paid {
                let id = ScheduleFixtures.paymentId("allowance", m.id, d.description)
                guard let split = m.split else { expected[id] = (m, d, PotTests.defaultPot(m.child)); continue }
                // The first pot's part keeps the payment's id; the other has an id of its own.
                expected[id] = (m, d, split[0])
                let other = UUIDv5.make(namespace: LedgerIDs.namespace, name: "allowance:\(m.id):\(d):\(split[1])").lowercased
                expected[other] = (m, d, split[1])
            }
        }
        var seen: Set<String> = []
        for kid in kids {
            let txs = s.transactions(owner, h, kid)
            for t in txs where t["source"]?.stringValue == "allowance" && t["reversesId"] == .null {
                let id = t["id"]!.stringValue!
                XCTAssertTrue(seen.insert(id).inserted, "\(context): \(id) twice")
                guard let (m, date, pot) = expected[id] else { XCTFail("\(context): a payment nobody owed: \(t)"); continue }
                XCTAssertEqual(t["childId"]?.stringValue, m.child, context)
                XCTAssertEqual(t["potId"]?.stringValue, pot, "\(context): the pot of \(id)")
                let due = m.state.terms.dueInstantMs(date)
                XCTAssertEqual(Timestamp.parse(t["createdAt"]!.stringValue!), due, "\(context): \(date) in \(m.state.terms.timeZone)")
                XCTAssertGreaterThanOrEqual(Timestamp.parse(t["recordedAt"]!.stringValue!)!, due, "\(context): paid before it was due")
                XCTAssertEqual(t["reversedById"] != .null, undone.contains(id), "\(context): undo of \(id)")
            }
            let sum = txs.reduce(Int64(0)) { $0 + $1["amountCents"]!.intValue! }
            XCTAssertEqual(s.balance(owner, h, kid), sum, "\(context): balance of \(kid)")
            // Each pot is the sum of its transactions; together they are the balance.
            let listed = s.call("GET", "/v1/households/\(h)/children/\(kid)/pots", token: owner).json["items"]?.arrayValue ?? []
            XCTAssertEqual(listed.count, 2, context)
            for pot in listed {
                let inPot = txs.filter { $0["potId"] == pot["id"] }.reduce(Int64(0)) { $0 + $1["amountCents"]!.intValue! }
                XCTAssertEqual(pot["balanceCents"]?.intValue, inPot, "\(context): pot \(pot["name"]!)")
            }
            XCTAssertEqual(listed.reduce(Int64(0)) { $0 + $1["balanceCents"]!.intValue! }, sum, "\(context): pots of \(kid)")
        }
        XCTAssertEqual(seen, Set(expected.keys), "\(context): dates due but unpaid")
    }
}
