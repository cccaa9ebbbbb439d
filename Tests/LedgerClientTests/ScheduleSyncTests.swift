import Foundation
@testable import LedgerClient
import LedgerModel
import XCTest

/// Schedules and pots between devices through the sync contract (an in-memory server): two
/// phones offline paying the same allowance, undo on one, edits, transfers kept whole in a
/// push, a join that brings schedules and pots, and exports.
final class ScheduleSyncTests: XCTestCase {
    private let clock = Locked<Int64>(0)

    private func at(_ text: String) throws {
        let ms = try XCTUnwrap(Timestamp.parse(text), text)
        clock.withLock { $0 = ms }
    }

    private func onClock(_ devices: Device...) {
        for d in devices {
            d.service.now = { [clock] in clock.withLock { $0 } }
            d.engine.now = { [clock] in clock.withLock { $0 } }
        }
    }

    /// Mom shares a ledger with Ann (10.00) and Dad joins it, every step on the test's clock
    /// (set to `start` first).
    private func makePair(at start: String) throws -> (FakeLedgerServer, Device, Device, ChildRecord) {
        try at(start)
        let server = FakeLedgerServer()
        let mom = try Device(server: server), dad = try Device(server: server, seed: 2)
        onClock(mom, dad)
        let ann = try mom.service.addChild(name: "Ann")
        try mom.service.addMoney(childId: ann.id, cents: 1000)
        try mom.signup("mom"); try dad.signup("dad")
        try ShareFlow(engine: mom.engine).enable(name: "Smiths")
        let p = try ShareFlow(engine: mom.engine).invite(handle: "dad", readOnly: false)
        _ = try JoinFlow(engine: dad.engine).join(invitationId: p.invitationId!, replaceLocal: false)
        return (server, mom, dad, ann)
    }

    private func weekly(_ cents: Int64, from first: LocalDate, zone: String = "UTC") -> LedgerService.ScheduleDraft {
        .init(kind: .allowance, amountCents: cents, cadence: .weekly, firstDate: first, timeZone: zone)
    }

    /// The allowance transactions of a device, by id.
    private func allowanceIds(_ d: Device) throws -> Set<String> {
        Set(try d.store.allTransactions().filter { $0.source == "allowance" && $0.reversesId == nil }.map(\.id))
    }

    private func assertConverged(_ server: FakeLedgerServer, _ devices: Device..., file: StaticString = #filePath, line: UInt = #line) throws {
        let hh = try devices[0].store.household().id
        for d in devices {
            XCTAssertEqual(try d.balances(), server.balances(hh), file: file, line: line)
            XCTAssertTrue(try d.store.balanceMismatches().isEmpty, file: file, line: line)
            XCTAssertEqual(try d.store.pendingCount(), 0, file: file, line: line)
        }
    }

    func testTwoOfflinePhonesPayTheSamePeriodsAndTheServerHoldsEachOnce() throws {
        let (server, mom, dad, ann) = try makePair(at: "2025-12-30T12:00:00.000Z")
        let schedule = try mom.service.addSchedule(childId: ann.id, weekly(500, from: LocalDate(2026, 1, 1), zone: "Europe/Zurich"))
        try mom.engine.sync(); try dad.engine.sync()
        XCTAssertEqual(try dad.store.schedule(id: schedule.id)?.amountCents, 500)

        // Both offline for four weeks: each pays 01-01 … 01-29 itself.
        try at("2026-01-29T12:00:00.000Z")
        XCTAssertEqual(try mom.service.payDueAllowances(), 5)
        XCTAssertEqual(try dad.service.payDueAllowances(), 5)
        XCTAssertEqual(try mom.service.payDueAllowances(), 0, "paid once per period")
        XCTAssertEqual(try mom.balances(), [ann.id: 3_500])
        XCTAssertEqual(try dad.balances(), [ann.id: 3_500])
        XCTAssertEqual(try allowanceIds(mom), try allowanceIds(dad), "the same ids on both phones")

        try mom.engine.sync(); try dad.engine.sync(); try mom.engine.sync()
        let hh = try mom.store.household().id
        let paid = server.transactions(hh).filter { $0.source == "allowance" }
        XCTAssertEqual(paid.count, 5, "each period once on the server")
        XCTAssertEqual(Set(paid.map(\.id)), try allowanceIds(mom))
        try assertConverged(server, mom, dad)
        XCTAssertEqual(server.balances(hh), [ann.id: 3_500])
    }

    func testAnAllowanceUndoneOnOnePhoneIsNotPaidAgainByTheOther() throws {
        let (server, mom, dad, ann) = try makePair(at: "2026-01-16T12:00:00.000Z")
        // Created with past dates: 01-01, 01-08 and 01-15 are paid at once on Mum's phone.
        let schedule = try mom.service.addSchedule(childId: ann.id, weekly(200, from: LocalDate(2026, 1, 1)))
        let first = ScheduleIDs.payment(kind: .allowance, scheduleId: UUID(uuidString: schedule.id)!, date: LocalDate(2026, 1, 1))
        try mom.service.undo(transactionId: first.lowercased)
        try mom.engine.sync()
        // Dad's phone learns of the schedule from a server that has paid nothing (its next due
        // date is the first date), with Mum's payments and her undo.
        try dad.engine.sync()
        XCTAssertEqual(try dad.service.payDueAllowances(), 0)
        try at("2026-01-22T00:00:00.000Z")
        XCTAssertEqual(try dad.service.payDueAllowances(), 1, "the next period is paid")
        try dad.engine.sync(); try mom.engine.sync()
        XCTAssertEqual(try mom.service.payDueAllowances(), 0, "Mum's phone takes Dad's payment as paid")
        try mom.engine.sync()
        try assertConverged(server, mom, dad)
        XCTAssertEqual(try mom.balances(), [ann.id: 1_000 + 3 * 200])
    }

    func testPausingOnOnePhoneStopsTheOthersPayments() throws {
        let (server, mom, dad, ann) = try makePair(at: "2026-03-01T12:00:00.000Z")
        let schedule = try mom.service.addSchedule(childId: ann.id, weekly(100, from: LocalDate(2026, 3, 2)))
        try mom.engine.sync(); try dad.engine.sync()
        try dad.service.editSchedule(id: schedule.id, .init(paused: true))
        try dad.engine.sync(); try mom.engine.sync()
        XCTAssertEqual(try mom.store.schedule(id: schedule.id)?.paused, true)
        try at("2026-03-20T12:00:00.000Z")
        XCTAssertEqual(try mom.service.payDueAllowances(), 0, "a schedule paused elsewhere pays nothing here")
        try mom.service.editSchedule(id: schedule.id, .init(amountCents: 150, paused: false))
        try at("2026-03-23T12:00:00.000Z")
        try mom.engine.sync(); try dad.engine.sync()
        XCTAssertEqual(try dad.store.schedule(id: schedule.id)?.amountCents, 150)
        XCTAssertEqual(try dad.service.payDueAllowances(), 1, "03-23 at the new amount; the paused weeks are skipped")
        XCTAssertEqual(try mom.service.payDueAllowances(), 1)
        try dad.engine.sync(); try mom.engine.sync(); try dad.engine.sync()
        try assertConverged(server, mom, dad)
        XCTAssertEqual(try dad.balances(), [ann.id: 1_150])

        // A resume with back pay pays the held dates here and tells the server so, once.
        try mom.service.editSchedule(id: schedule.id, .init(paused: true))
        try at("2026-04-07T12:00:00.000Z")
        let resumed = try mom.service.editSchedule(id: schedule.id, .init(paused: false, backPay: true))
        XCTAssertEqual(resumed.catchUp?.paid, 2, "03-30 and 04-06")
        try mom.service.editSchedule(id: schedule.id, .init(note: "pocket money"))
        try mom.engine.sync()
        try mom.service.editSchedule(id: schedule.id, .init(amountCents: 175))
        try mom.engine.sync(); try dad.engine.sync()
        let pushed = server.state.withLock { $0.pushedSchedules }.filter { $0.id == schedule.id }
        XCTAssertEqual(pushed.suffix(2).map(\.backPay), [true, false], "back pay rides with the edit that asked for it, once")
        try assertConverged(server, mom, dad)
    }

    func testTransfersArePushedWholeAndPotsConverge() throws {
        let (server, mom, dad, ann) = try SyncEngineTests.makePair()
        mom.engine.pushBatchSize = 4
        let save = try mom.service.addPot(childId: ann.id, name: "Save", targetCents: 5_000)
        let main = LedgerService.defaultPot(of: ann.id)
        var transfers: [(String, String)] = []
        for i in 1...7 {
            try mom.service.addMoney(childId: ann.id, cents: Int64(i))
            let (out, into) = try mom.service.transfer(cents: 10 * Int64(i), from: i % 2 == 0 ? save.id : main, to: i % 2 == 0 ? main : save.id)
            transfers.append((out.id, into.id))
        }
        // Dad, offline at the same time, makes a pot of his own and moves money into it.
        let give = try dad.service.addPot(childId: ann.id, name: "Give")
        let dadMove = try dad.service.transfer(cents: 25, from: main, to: give.id)
        transfers.append((dadMove.out.id, dadMove.in.id))
        try mom.engine.sync(); try dad.engine.sync(); try mom.engine.sync()
        let batches = server.state.withLock { $0.pushedTransactionBatches }
        for (out, into) in transfers {
            let batch = try XCTUnwrap(batches.first { $0.contains(out) })
            XCTAssertTrue(batch.contains(into), "a transfer's two transactions go in one push")
        }
        XCTAssertGreaterThan(batches.count, 2, "the queue took several pushes")
        try assertConverged(server, mom, dad)
        XCTAssertEqual(try dad.store.pot(id: save.id)?.targetCents, 5_000)
        XCTAssertEqual(try mom.store.pot(id: give.id)?.name, "Give")
        XCTAssertEqual(try dad.store.potBalances(childId: ann.id, defaultPot: main),
                       try mom.store.potBalances(childId: ann.id, defaultPot: main))
    }

    func testAJoinBringsSchedulesAndPotsAndAnExportCarriesThem() throws {
        try at("2026-05-20T12:00:00.000Z")
        let server = FakeLedgerServer()
        let mom = try Device(server: server), dad = try Device(server: server, seed: 2)
        onClock(mom, dad)
        let ann = try mom.service.addChild(name: "Ann")
        let save = try mom.service.addPot(childId: ann.id, name: "Save", targetCents: 900, targetDate: LocalDate(2026, 12, 24))
        let schedule = try mom.service.addSchedule(childId: ann.id, weekly(400, from: LocalDate(2026, 5, 1)))  // 3 dates paid
        let main = LedgerService.defaultPot(of: ann.id)
        try mom.service.transfer(cents: 500, from: main, to: save.id)
        try mom.signup("mom"); try dad.signup("dad")
        try ShareFlow(engine: mom.engine).enable(name: "Smiths")
        let p = try ShareFlow(engine: mom.engine).invite(handle: "dad", readOnly: false)
        _ = try JoinFlow(engine: dad.engine).join(invitationId: p.invitationId!, replaceLocal: false)

        XCTAssertEqual(try dad.store.schedule(id: schedule.id)?.amountCents, 400)
        XCTAssertEqual(try dad.store.pot(id: save.id)?.targetDate, LocalDate(2026, 12, 24))
        XCTAssertEqual(try dad.store.potBalances(childId: ann.id, defaultPot: main), [main: 700, save.id: 500])
        XCTAssertEqual(try dad.service.payDueAllowances(), 0, "the dates Mum paid are paid")

        let path = FileManager.default.temporaryDirectory.appendingPathComponent("schedules-\(UUID().uuidString).json.gz").path
        defer { try? FileManager.default.removeItem(atPath: path) }
        try LedgerExporter(store: mom.store).export(to: path, now: clock.withLock { $0 })
        let restored = try Device(server: FakeLedgerServer())
        onClock(restored)
        try LedgerExporter(store: restored.store).importFile(path, now: clock.withLock { $0 })
        XCTAssertEqual(try restored.store.potBalances(childId: ann.id, defaultPot: main), [main: 700, save.id: 500])
        XCTAssertEqual(try restored.store.pot(id: save.id)?.targetCents, 900)
        XCTAssertEqual(try restored.service.payDueAllowances(), 0, "an import pays nothing twice")
        try at("2026-05-29T12:00:00.000Z")
        XCTAssertEqual(try restored.service.payDueAllowances(), 2, "and goes on paying from the next date: 05-22 and 05-29")
    }

    func testAScheduleOfAChildNotHereYetDoesNotHoldUpTheOthers() throws {
        try at("2026-02-01T12:00:00.000Z")
        let device = try Device(server: FakeLedgerServer())
        onClock(device)
        let ann = try device.service.addChild(name: "Ann")
        var orphan = try device.service.addSchedule(childId: ann.id, weekly(100, from: LocalDate(2026, 2, 2)))
        orphan.id = UUID().lowercased
        orphan.childId = UUID().lowercased  // as a feed page can bring it before its child
        try device.store.upsert(orphan)
        try at("2026-02-10T12:00:00.000Z")
        XCTAssertEqual(try device.service.payDueAllowances(), 2, "Ann's schedule pays 02-02 and 02-09")
        XCTAssertEqual(try device.balances(), [ann.id: 200])
        // The child arrives: its schedule pays the dates it waited for.
        let ben = ChildRecord(id: orphan.childId, name: "Ben", sortOrder: 1, archived: false, createdAt: 0, modifiedAt: 0, modifiedBy: "x")
        try device.store.upsert(ben)
        XCTAssertEqual(try device.service.payDueAllowances(), 2)
        XCTAssertEqual(try device.balances(), [ann.id: 200, ben.id: 200])
    }
}
