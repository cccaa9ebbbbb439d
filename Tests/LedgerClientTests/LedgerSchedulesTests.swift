import Foundation
@testable import LedgerClient
import LedgerModel
import XCTest

/// Schedules, pots and the allowance a device pays itself, without a server: due instants in
/// a DST zone, month ends, undo, two ledgers on one store, transfers and goals.
final class LedgerSchedulesTests: XCTestCase {
    private var directory: URL!
    /// The ledgers' clock, in milliseconds since the epoch.
    private let clock = Locked<Int64>(0)

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-schedules-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func open(_ name: String = "family", check interval: Double = 300) async throws -> Ledger {
        var options = Ledger.Options()
        options.clock = { [clock] in clock.withLock { $0 } }
        options.allowanceCheckInterval = interval
        return try await Ledger.open(store: directory.appendingPathComponent("\(name).store"), server: nil,
                                     credentials: FileCredentialStore(directory: directory), transport: nil, options: options)
    }

    private let utc = TimeZone(identifier: "UTC")!

    /// A ledger on the test's clock, set to `instant` first, with one child, Ada.
    private func ledgerWithAda(at instant: String, check interval: Double = 300) async throws -> (Ledger, LedgerClient.Child) {
        try setClock(instant)
        let ledger = try await open(check: interval)
        return (ledger, try await ledger.addChild(named: "Ada"))
    }

    private func setClock(_ text: String) throws {
        let ms = try XCTUnwrap(Timestamp.parse(text), text)
        clock.withLock { $0 = ms }
    }

    private func allowances(_ ledger: Ledger, _ child: String) async throws -> [LedgerClient.LedgerTransaction] {
        try await ledger.history(of: child, limit: 1000).items.filter { $0.source == .allowance }.reversed()
    }

    func testWeeklyAllowanceInNewYorkIsPaidAtLocalMidnightAcrossTheSpringChange() async throws {
        let (ledger, ada) = try await ledgerWithAda(at: "2026-02-27T12:00:00.000Z")
        let zone = try XCTUnwrap(TimeZone(identifier: "America/New_York"))
        let schedule = try await ledger.addSchedule(.allowance(cents: 500, every: .weekly, firstDate: LocalDate(2026, 3, 1), timeZone: zone),
                                                    for: ada.id, note: "pocket money")
        XCTAssertEqual(schedule.nextDueDate, LocalDate(2026, 3, 1))
        var snap = try await ledger.snapshot()
        XCTAssertEqual(snap.children[0].balanceCents, 0, "nothing is due before the first date")
        XCTAssertEqual(snap.children[0].nextPayment, NextPayment(date: LocalDate(2026, 3, 1), cents: 500))

        // 2026-03-01 begins at 05:00Z (EST), 03-08 too (the clocks change at 02:00), 03-15 at 04:00Z (EDT).
        let steps: [(String, Int64)] = [("2026-03-01T04:59:59.999Z", 0), ("2026-03-01T05:00:00.000Z", 500),
                                        ("2026-03-08T04:59:59.999Z", 500), ("2026-03-08T05:00:00.000Z", 1_000),
                                        ("2026-03-15T03:59:59.999Z", 1_000), ("2026-03-15T04:00:00.000Z", 1_500)]
        for (instant, balance) in steps {
            try setClock(instant)
            snap = try await ledger.snapshot()
            XCTAssertEqual(snap.children[0].balanceCents, balance, "at \(instant)")
        }
        let paid = try await allowances(ledger, ada.id)
        let sid = try XCTUnwrap(UUID(uuidString: schedule.id))
        let dates = [LocalDate(2026, 3, 1), LocalDate(2026, 3, 8), LocalDate(2026, 3, 15)]
        XCTAssertEqual(paid.map(\.id), dates.map { ScheduleIDs.payment(kind: .allowance, scheduleId: sid, date: $0).lowercased })
        XCTAssertEqual(paid.map { $0.createdAt.ms },
                       ["2026-03-01T05:00:00.000Z", "2026-03-08T05:00:00.000Z", "2026-03-15T04:00:00.000Z"].map { Timestamp.parse($0)! })
        XCTAssertEqual(paid.map(\.note), Array(repeating: "pocket money", count: 3))
        XCTAssertEqual(snap.children[0].nextPayment?.date, LocalDate(2026, 3, 22))
    }

    func testMonthlyOnThe31stPaysTheLastDayOfShorterMonthsAndCatchesUpOnce() async throws {
        let (ledger, ada) = try await ledgerWithAda(at: "2027-05-01T00:00:00.000Z")
        // Created with its first date in the past: the four dates due are paid with the creation.
        let monthly = try await ledger.addSchedule(.allowance(cents: 1_000, every: .monthly, firstDate: LocalDate(2027, 1, 31), timeZone: utc),
                                                   for: ada.id)
        XCTAssertEqual(monthly.catchUp, ScheduleCatchUp(paid: 4, skipped: 0, dropped: 0))
        let paid = try await allowances(ledger, ada.id)
        XCTAssertEqual(paid.map { Timestamp.format(ms: $0.createdAt.ms) },
                       ["2027-01-31T00:00:00.000Z", "2027-02-28T00:00:00.000Z", "2027-03-31T00:00:00.000Z", "2027-04-30T00:00:00.000Z"])
        let again = try await ledger.snapshot()
        XCTAssertEqual(again.children[0].balanceCents, 4_000, "a snapshot pays nothing twice")
        XCTAssertEqual(again.children[0].nextPayment, NextPayment(date: LocalDate(2027, 5, 31), cents: 1_000))
    }

    func testAFirstDateYearsBackPaysTheLatest366PeriodsAndSaysSo() async throws {
        let (ledger, ada) = try await ledgerWithAda(at: "2026-06-01T12:00:00.000Z")
        // Thursdays from 2016-01-07 to 2026-05-28: 543 dates.
        let schedule = try await ledger.addSchedule(.allowance(cents: 1, every: .weekly, firstDate: LocalDate(2016, 1, 7), timeZone: utc),
                                                    for: ada.id)
        XCTAssertEqual(schedule.catchUp, ScheduleCatchUp(paid: 366, skipped: 0, dropped: 543 - 366))
        let snap = try await ledger.snapshot()
        XCTAssertEqual(snap.children[0].balanceCents, 366, "the dropped dates are never paid later")
        let oldest = try await ledger.history(of: ada.id, limit: 1000).items.last
        XCTAssertEqual(oldest.map { Timestamp.format(ms: $0.createdAt.ms) }, "2019-05-30T00:00:00.000Z", "the latest 366 dates: 2019-05-30 … 2026-05-28")
    }

    func testAnUndoneAllowanceStaysUndoneAndPausingSkipsPeriods() async throws {
        let (ledger, ada) = try await ledgerWithAda(at: "2026-12-04T12:00:00.000Z")
        let zurich = try XCTUnwrap(TimeZone(identifier: "Europe/Zurich"))
        let schedule = try await ledger.addSchedule(.allowance(cents: 500, every: .weekly, firstDate: LocalDate(2026, 12, 4), timeZone: zurich),
                                                    for: ada.id)
        let paidFirst = try await allowances(ledger, ada.id)
        let first = try XCTUnwrap(paidFirst.first)
        XCTAssertEqual(first.id, ScheduleIDs.payment(kind: .allowance, scheduleId: UUID(uuidString: schedule.id)!,
                                                     date: LocalDate(2026, 12, 4)).lowercased)
        _ = try await ledger.reverse(first.id)
        try setClock("2026-12-11T12:00:00.000Z")
        var snap = try await ledger.snapshot()
        XCTAssertEqual(snap.children[0].balanceCents, 500, "the undone date is not paid again; the next one is")

        try await ledger.pause(schedule.id)
        try setClock("2026-12-26T12:00:00.000Z")
        snap = try await ledger.snapshot()
        XCTAssertEqual(snap.children[0].balanceCents, 500, "nothing is paid while paused")
        XCTAssertNil(snap.children[0].nextPayment)
        let resumed = try await ledger.resume(schedule.id)
        XCTAssertEqual(resumed.catchUp, ScheduleCatchUp(paid: 0, skipped: 2, dropped: 0), "12-18 and 12-25 were held")
        snap = try await ledger.snapshot()
        XCTAssertEqual(snap.children[0].balanceCents, 500, "resuming skips the held dates")
        XCTAssertEqual(snap.children[0].nextPayment?.date, LocalDate(2027, 1, 1))

        try await ledger.remove(schedule.id)
        try setClock("2027-02-01T12:00:00.000Z")
        snap = try await ledger.snapshot()
        XCTAssertEqual(snap.children[0].balanceCents, 500, "a removed schedule pays nothing more")
        let left = try await ledger.schedules(for: ada.id)
        XCTAssertEqual(left, [])
    }

    func testWhileAutomaticSyncRunsAllowanceIsPaidWhenItFallsDue() async throws {
        let (ledger, ada) = try await ledgerWithAda(at: "2026-04-01T00:00:00.000Z", check: 0.05)
        _ = try await ledger.addSchedule(.allowance(cents: 300, every: .weekly, firstDate: LocalDate(2026, 4, 2), timeZone: utc), for: ada.id)
        await ledger.startAutomaticSync()
        defer { Task { await ledger.stopAutomaticSync() } }
        let paid = Task {
            for await snap in ledger.snapshots() where snap.children.first?.balanceCents == 300 { return true }
            return false
        }
        try await Task.sleep(nanoseconds: 200_000_000)
        let early = try await ledger.history(of: ada.id).items.count
        XCTAssertEqual(early, 0, "nothing before the due instant")
        try setClock("2026-04-02T00:00:00.000Z")
        let deadline = Task {
            try await Task.sleep(nanoseconds: 5_000_000_000)
            paid.cancel()
        }
        let seen = await paid.value
        deadline.cancel()
        XCTAssertTrue(seen, "the timer paid the allowance without a call")
    }

    func testTwoLedgersOnOneStorePayEachPeriodOnce() async throws {
        let (app, ada) = try await ledgerWithAda(at: "2026-01-01T00:00:00.000Z")
        _ = try await app.addSchedule(.allowance(cents: 100, every: .weekly, firstDate: LocalDate(2026, 1, 8), timeZone: utc), for: ada.id)
        let widget = try await open()
        try setClock("2026-03-01T00:00:00.000Z")  // 8 Thursdays due: 01-08 … 02-26
        async let a = app.snapshot()
        async let b = widget.snapshot()
        let (snapA, snapB) = try await (a, b)
        XCTAssertEqual(snapA.children[0].balanceCents, 800)
        XCTAssertEqual(snapB.children[0].balanceCents, 800)
        let paid = try await allowances(widget, ada.id)
        XCTAssertEqual(Set(paid.map(\.id)).count, 8)
        XCTAssertEqual(paid.count, 8)
    }

    func testPotsTransfersAndGoals() async throws {
        let (ledger, ada) = try await ledgerWithAda(at: "2026-06-01T08:00:00.000Z")
        try await ledger.add(cents: 1_000, to: ada.id)
        let save = try await ledger.addPot(named: "Save", for: ada.id, target: 2_000, by: LocalDate(2027, 6, 1))
        var pots = try await ledger.pots(of: ada.id)
        XCTAssertEqual(pots.map(\.name), ["Main", "Save"])
        let main = pots[0]
        XCTAssertTrue(main.isDefault)
        XCTAssertEqual(main.id, ScheduleIDs.defaultPot(childId: UUID(uuidString: ada.id)!).lowercased)

        let transfer = try await ledger.move(cents: 300, from: main.id, to: save.id, note: "saving up")
        let tid = try XCTUnwrap(UUID(uuidString: transfer.id))
        XCTAssertEqual(transfer.out.id, ScheduleIDs.transferOut(id: tid).lowercased)
        XCTAssertEqual(transfer.in.id, ScheduleIDs.transferIn(id: tid).lowercased)
        XCTAssertEqual(transfer.out.potId, main.id)
        XCTAssertEqual(transfer.in.potId, save.id)
        try await ledger.take(cents: 50, from: ada.id, pot: save.id)

        let snap = try await ledger.snapshot()
        XCTAssertEqual(snap.children[0].balanceCents, 950, "a transfer leaves the child's balance as it was")
        pots = snap.children[0].pots
        XCTAssertEqual(pots.map(\.balanceCents), [700, 250])
        XCTAssertEqual(pots.map(\.balanceCents).reduce(0, +), snap.children[0].balanceCents)
        XCTAssertEqual(pots[1].progress ?? -1, 0.125, accuracy: 1e-9)

        let goal = try await ledger.setGoal(target: 500, by: nil, for: save.id)
        XCTAssertEqual(goal.targetCents, 500)
        XCTAssertEqual(goal.progress ?? -1, 0.5, accuracy: 1e-9)
        let renamed = try await ledger.renamePot(main.id, to: "Spend")
        XCTAssertEqual(renamed.name, "Spend")
        XCTAssertEqual(renamed.balanceCents, 700)

        await assertThrows(.invalidAmount) { try await ledger.move(cents: 0, from: main.id, to: save.id) }
        await assertThrows(.notFound) { try await ledger.move(cents: 5, from: main.id, to: UUID().uuidString) }
        let ben = try await ledger.addChild(named: "Ben")
        let bens = try await ledger.pots(of: ben.id)
        do {
            _ = try await ledger.move(cents: 5, from: main.id, to: bens[0].id)
            XCTFail("moved money to another child's pot")
        } catch LedgerError.invalidInput(let field, _) {
            XCTAssertEqual(field, "pot")
        }
    }

    func testInvalidSchedulesAreRefusedWithTheField() async throws {
        let (ledger, ada) = try await ledgerWithAda(at: "2026-06-01T08:00:00.000Z")
        await assertThrows(.invalidAmount) {
            try await ledger.addSchedule(.allowance(cents: 0, every: .weekly, firstDate: LocalDate(2026, 6, 5), timeZone: utc), for: ada.id)
        }
        let cases: [(NewSchedule, String)] = [
            (.interest(basisPoints: 0, every: .monthly, firstDate: LocalDate(2026, 6, 5), timeZone: utc), "rate"),
            (.allowance(cents: 5, every: .weekly, firstDate: LocalDate(2026, 6, 5), timeZone: TimeZone(identifier: "EST")!), "timeZone"),
        ]
        for (schedule, field) in cases {
            do {
                _ = try await ledger.addSchedule(schedule, for: ada.id)
                XCTFail("accepted \(schedule)")
            } catch LedgerError.invalidInput(let f, _) {
                XCTAssertEqual(f, field)
            }
        }
        let interest = try await ledger.addSchedule(.interest(basisPoints: 100, every: .monthly, firstDate: LocalDate(2026, 1, 1), timeZone: utc),
                                                    for: ada.id)
        XCTAssertEqual(interest.rateBasisPoints, 100)
        await assertThrows(.invalidInput(field: "source", message: "interest is paid by the server only")) {
            try await ledger.add(cents: 5, to: ada.id, source: .interest)
        }
        let snap = try await ledger.snapshot()
        XCTAssertEqual(snap.children[0].balanceCents, 0, "interest is the server's to pay")
    }

    private func assertThrows(_ expected: LedgerError, file: StaticString = #filePath, line: UInt = #line,
                              _ body: () async throws -> some Any) async {
        do {
            _ = try await body()
            XCTFail("no error", file: file, line: line)
        } catch let error as LedgerError {
            XCTAssertEqual(error, expected, file: file, line: line)
        } catch {
            XCTFail("\(error)", file: file, line: line)
        }
    }
}
