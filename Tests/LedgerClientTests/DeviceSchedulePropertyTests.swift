import Foundation
@testable import LedgerClient
import LedgerClientTesting
import LedgerModel
import XCTest

/// Random allowance schedules (zones with DST changes, month ends), random pauses, resumes,
/// edits, undos and syncs on two phones that are often offline, with time moving on: every
/// payment is one of its schedule's due dates, written at that date's due instant and never
/// before it, each date is held once, a running schedule leaves no due date unpaid, and the
/// phones and the server converge with balances equal to sums.
final class DeviceSchedulePropertyTests: XCTestCase {
    func testRandomSchedulesOnTwoOfflinePhones() throws {
        for seed in [UInt64(1), 7, 42] { try run(seed: seed) }
    }

    private func run(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let clock = Locked<Int64>(Timestamp.parse("2027-01-20T09:00:00.000Z")!)
        let server = FakeLedgerServer()
        let mom = try Device(server: server), dad = try Device(server: server, seed: 2)
        for d in [mom, dad] {
            d.service.now = { clock.withLock { $0 } }
            d.engine.now = { clock.withLock { $0 } }
        }
        let ann = try mom.service.addChild(name: "Ann")
        try mom.signup("mom"); try dad.signup("dad")
        try ShareFlow(engine: mom.engine).enable(name: "Smiths")
        let invitation = try ShareFlow(engine: mom.engine).invite(handle: "dad", readOnly: false)
        _ = try JoinFlow(engine: dad.engine).join(invitationId: invitation.invitationId!, replaceLocal: false)

        let zones = ["Europe/Zurich", "America/New_York", "Australia/Lord_Howe", "America/Havana", "UTC"]
        let cadences: [ScheduleCadence] = [.weekly, .everyTwoWeeks, .monthly]
        var schedules: [String] = []
        /// Schedules that were paused, edited or removed at some point (their calendar of paid
        /// dates has gaps by design).
        var changed = Set<String>()
        let devices = [mom, dad]
        for step in 0..<200 {
            let d = devices[Int.random(in: 0..<2, using: &rng)]
            switch Int.random(in: 0..<10, using: &rng) {
            case 0 where schedules.count < 5:
                let first = LocalDate(2027, Int.random(in: 1...4, using: &rng), [1, 15, 28, 29, 30, 31].randomElement(using: &rng)!)
                let draft = LedgerService.ScheduleDraft(kind: .allowance, amountCents: Int64.random(in: 1...900, using: &rng),
                                                        cadence: cadences.randomElement(using: &rng)!, firstDate: first,
                                                        timeZone: zones.randomElement(using: &rng)!)
                schedules.append(try d.service.addSchedule(childId: ann.id, draft).id)
            case 1 where !schedules.isEmpty:
                let id = schedules.randomElement(using: &rng)!
                guard let s = try d.store.schedule(id: id), !s.deleted else { break }
                changed.insert(id)
                try d.service.editSchedule(id: id, .init(paused: !s.paused, backPay: Bool.random(using: &rng)))
            case 2 where !schedules.isEmpty:
                let id = schedules.randomElement(using: &rng)!
                guard let s = try d.store.schedule(id: id), !s.deleted else { break }
                changed.insert(id)
                try d.service.editSchedule(id: id, .init(amountCents: Int64.random(in: 1...900, using: &rng)))
            case 3 where !schedules.isEmpty && step % 7 == 0:
                let id = schedules.randomElement(using: &rng)!
                guard let s = try d.store.schedule(id: id), !s.deleted else { break }
                changed.insert(id)
                try d.service.removeSchedule(id: id)
            case 4:
                let paid = try d.store.allTransactions().filter { $0.source == "allowance" && $0.reversesId == nil }
                if let t = paid.randomElement(using: &rng) { try d.service.undo(transactionId: t.id) }
            case 5, 6:
                try d.engine.sync()
            default:
                // Time moves on, up to four days, and the phone pays what fell due.
                clock.withLock { $0 += Int64.random(in: 1...(4 * 86_400_000), using: &rng) }
                try d.service.payDueAllowances()
            }
            try assertPaymentsAreDueDates(d, now: clock.withLock { $0 })
        }
        for _ in 0..<2 { for d in devices { try d.service.payDueAllowances(); try d.engine.sync() } }

        let hh = try mom.store.household().id
        XCTAssertEqual(try mom.balances(), server.balances(hh), "seed \(seed)")
        XCTAssertEqual(try dad.balances(), server.balances(hh), "seed \(seed)")
        XCTAssertEqual(Set(try mom.store.allTransactions().map(\.id)), Set(try dad.store.allTransactions().map(\.id)), "seed \(seed)")
        for d in devices {
            XCTAssertTrue(try d.store.balanceMismatches().isEmpty)
            XCTAssertEqual(try d.store.pendingCount(), 0, "seed \(seed)")
        }
        let payments = try mom.store.allTransactions().filter { $0.source == "allowance" }
        XCTAssertGreaterThan(payments.count, 10, "seed \(seed): the run paid allowance")
        XCTAssertTrue(payments.contains { $0.reversesId != nil }, "seed \(seed): the run undid some")
        // A schedule never paused, edited or removed has every due date paid (or undone).
        let now = clock.withLock { $0 }
        for id in schedules where !changed.contains(id) {
            let s = try XCTUnwrap(try mom.store.schedule(id: id))
            let terms = try XCTUnwrap(s.terms)
            for date in terms.recurrence.dueDates(atMs: now, in: terms.timeZone) {
                let pid = ScheduleIDs.payment(kind: .allowance, scheduleId: UUID(uuidString: id)!, date: date)
                XCTAssertTrue(try mom.store.isPaidOrUndone(pid), "seed \(seed): \(id) \(date) unpaid")
            }
        }
    }

    /// Every allowance payment on `d` is a due date of its schedule, created at that date's due
    /// instant, which is not after `now`.
    private func assertPaymentsAreDueDates(_ d: Device, now: Int64) throws {
        let schedules = try d.store.schedules(includeDeleted: true)
        var byPayment: [String: (LocalDate, ScheduleRecord)] = [:]
        for t in try d.store.allTransactions() where t.source == "allowance" && t.reversesId == nil {
            if byPayment.isEmpty {
                for s in schedules {
                    guard let terms = s.terms, let sid = UUID(uuidString: s.id) else { continue }
                    for date in terms.recurrence.dueDates(atMs: now, in: terms.timeZone) {
                        byPayment[ScheduleIDs.payment(kind: .allowance, scheduleId: sid, date: date).lowercased] = (date, s)
                    }
                }
            }
            guard let (date, s) = byPayment[t.id] else { return XCTFail("\(t.id) is no due date of a schedule") }
            XCTAssertEqual(t.createdAt, s.terms!.dueInstantMs(date))
            XCTAssertLessThanOrEqual(t.createdAt, now, "paid before its due instant")
        }
    }
}
