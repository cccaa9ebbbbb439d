import Foundation
import XCTest
@testable import LedgerModel

final class ScheduleStateTests: XCTestCase {
    private func day(_ text: String) -> LocalDate { LocalDate(text)! }
    private func ms(_ text: String) -> Int64 { Timestamp.parse(text)! }
    private func zone(_ name: String) -> ScheduleTimeZone { try! ScheduleTimeZone(identifier: name) }
    private func texts(_ dates: [LocalDate]) -> [String] { dates.map(\.description) }

    /// `hour` o'clock of `date` in `zone` (on days without a change of offset).
    private func at(_ date: String, _ hour: Int, _ zone: ScheduleTimeZone) -> Int64 {
        zone.startOfDayMs(day(date)) + Int64(hour) * 3_600_000
    }

    /// A payer as the server or a device would be: it writes what plans and changes say, with
    /// the amount of the terms they name.
    private struct Payer {
        var state: ScheduleState
        var amountCents: Int64
        var paid: [(date: LocalDate, cents: Int64)] = []

        init(_ change: ScheduleChange, amountCents: Int64) {
            state = change.state
            self.amountCents = amountCents
            paid = change.payWithNewTerms.map { ($0, amountCents) }
        }

        @discardableResult
        mutating func run(atMs t: Int64) -> SchedulePlan {
            let plan = state.plan(atMs: t)
            paid += plan.pay.map { ($0, amountCents) }
            state = state.settled(by: plan)
            return plan
        }

        @discardableResult
        mutating func edit(atMs t: Int64, amountCents newAmount: Int64? = nil, backPay: Bool = false,
                           _ change: (inout ScheduleTerms) -> Void = { _ in }) -> ScheduleChange {
            var terms = state.terms
            change(&terms)
            let outcome = state.edited(to: terms, atMs: t, backPay: backPay)
            paid += outcome.payWithPreviousTerms.map { ($0, amountCents) }
            amountCents = newAmount ?? amountCents
            paid += outcome.payWithNewTerms.map { ($0, amountCents) }
            state = outcome.state
            return outcome
        }

        var dates: [String] { paid.map(\.date.description) }
        var total: Int64 { paid.reduce(0) { $0 + $1.cents } }
    }

    /// The worked example of `ScheduleState`'s documentation and docs/allowance.md.
    func testWorkedExample() {
        for backPay in [false, true] {
            let zurich = zone("Europe/Zurich")
            let schedule = UUID(uuidString: "0f5a3c1e-7b2d-4e8f-9a6c-1d2e3f4a5b6c")!
            let terms = ScheduleTerms(firstDate: day("2026-12-04"), cadence: .weekly, timeZone: zurich)
            let created = ScheduleState.created(terms, atMs: at("2026-12-01", 9, zurich))
            XCTAssertEqual(created.payWithNewTerms, [])
            var payer = Payer(created, amountCents: 500)
            XCTAssertEqual(payer.state.plan(atMs: at("2026-12-01", 9, zurich)).nextDueDate, day("2026-12-04"))

            var d = day("2026-12-02")
            while d <= day("2027-01-16") {
                payer.run(atMs: at(d.description, 7, zurich))
                if d == day("2026-12-20") {
                    let pause = payer.edit(atMs: at("2026-12-20", 18, zurich)) { $0.paused = true }
                    XCTAssertEqual(pause.payWithPreviousTerms, [], "nothing unpaid to settle")
                }
                if d == day("2027-01-01") {
                    XCTAssertEqual(payer.run(atMs: at("2027-01-01", 7, zurich)), SchedulePlan(held: 2))
                }
                if d == day("2027-01-03") {
                    let resume = payer.edit(atMs: at("2027-01-03", 18, zurich), amountCents: 600, backPay: backPay) { $0.paused = false }
                    XCTAssertEqual(resume.skipped, backPay ? 0 : 2)
                    XCTAssertEqual(texts(resume.payWithNewTerms), backPay ? ["2026-12-25", "2027-01-01"] : [])
                    XCTAssertEqual(resume.state.termsFrom, backPay ? day("2026-12-04") : day("2027-01-08"))
                }
                d = d.adding(days: 1)!
            }
            if backPay {
                XCTAssertEqual(payer.dates, ["2026-12-04", "2026-12-11", "2026-12-18", "2026-12-25", "2027-01-01", "2027-01-08", "2027-01-15"])
                XCTAssertEqual(payer.paid.map(\.cents), [500, 500, 500, 600, 600, 600, 600])
                XCTAssertEqual(payer.total, 3_900)
            } else {
                XCTAssertEqual(payer.dates, ["2026-12-04", "2026-12-11", "2026-12-18", "2027-01-08", "2027-01-15"])
                XCTAssertEqual(payer.paid.map(\.cents), [500, 500, 500, 600, 600])
                XCTAssertEqual(payer.total, 2_700)
            }
            // Ids and createdAt as the API writes them (ids from Python's uuid.uuid5).
            let ids = payer.paid.map { ScheduleIDs.payment(kind: .allowance, scheduleId: schedule, date: $0.date).lowercased }
            XCTAssertEqual(ids.first, "65fa6f96-76c4-578c-9595-c0882e331698")
            XCTAssertEqual(ids.last, "5e4feca8-4f92-5b95-a624-e82a5dcc87e7")
            XCTAssertEqual(Timestamp.format(ms: terms.dueInstantMs(day("2026-12-04"))), "2026-12-03T23:00:00.000Z")
            XCTAssertEqual(payer.state.plan(atMs: at("2027-01-16", 7, zurich)).nextDueDate, day("2027-01-22"))
        }
    }

    func testAFirstDateInThePastPaysTheMissedPeriodsOnce() {
        let utc = zone("UTC")
        let terms = ScheduleTerms(firstDate: day("2026-01-02"), cadence: .weekly, timeZone: utc)
        let created = ScheduleState.created(terms, atMs: ms("2026-03-01T12:00:00Z"))
        XCTAssertEqual(texts(created.payWithNewTerms), ["2026-01-02", "2026-01-09", "2026-01-16", "2026-01-23", "2026-01-30",
                                                        "2026-02-06", "2026-02-13", "2026-02-20", "2026-02-27"])
        XCTAssertEqual(created.dropped, 0)
        XCTAssertEqual(created.state.lastSettled, day("2026-02-27"))
        XCTAssertEqual(created.state.plan(atMs: ms("2026-03-05T12:00:00Z")), SchedulePlan(nextDueDate: day("2026-03-06")))
        XCTAssertEqual(texts(created.state.plan(atMs: ms("2026-03-06T00:00:00Z")).pay), ["2026-03-06"])
        // Created paused: nothing now; a resume with back pay pays from the first date.
        var paused = terms
        paused.paused = true
        let held = ScheduleState.created(paused, atMs: ms("2026-03-01T12:00:00Z"))
        XCTAssertEqual(held.payWithNewTerms, [])
        XCTAssertEqual(held.state.plan(atMs: ms("2026-03-01T12:00:00Z")).held, 9)
        XCTAssertEqual(held.state.edited(to: terms, atMs: ms("2026-03-01T13:00:00Z"), backPay: true).payWithNewTerms.count, 9)
        XCTAssertEqual(held.state.edited(to: terms, atMs: ms("2026-03-01T13:00:00Z")).skipped, 9)
    }

    func testAtMost366PeriodsPerChangeAndPerPlan() {
        let utc = zone("UTC")
        let terms = ScheduleTerms(firstDate: day("2000-01-07"), cadence: .weekly, timeZone: utc)
        let t = ms("2026-12-04T12:00:00Z")
        let due = terms.recurrence.dueCount(atMs: t, in: utc)
        XCTAssertEqual(due, 1_405)
        let created = ScheduleState.created(terms, atMs: t)
        XCTAssertEqual(created.payWithNewTerms.count, 366)
        XCTAssertEqual(created.dropped, due - 366)
        XCTAssertEqual(created.payWithNewTerms.last, day("2026-12-04"))
        XCTAssertEqual(created.payWithNewTerms.first, day("2019-12-06"))
        XCTAssertEqual(created.state.lastSettled, day("2026-12-04"))
        XCTAssertEqual(ScheduleState.created(terms, atMs: t, limit: 3).payWithNewTerms.count, 3)

        // A plan never drops: it pays the oldest 366 and defers the rest to the next plan.
        let idle = ScheduleState(terms: terms)
        let first = idle.plan(atMs: t)
        XCTAssertEqual(first.pay.count, 366)
        XCTAssertEqual(first.pay.first, day("2000-01-07"))
        XCTAssertEqual(first.deferred, due - 366)
        XCTAssertEqual(first.nextDueDate, terms.recurrence.date(at: 366))
        var state = idle.settled(by: first)
        var all = first.pay
        while true {
            let plan = state.plan(atMs: t)
            if plan.pay.isEmpty { break }
            all += plan.pay
            state = state.settled(by: plan)
        }
        XCTAssertEqual(all, terms.recurrence.dueDates(through: day("2026-12-04")))
        XCTAssertEqual(idle.plan(atMs: t, cap: 0).deferred, due)
    }

    /// Payers running at their own random instants, each with a state that may be behind,
    /// pay every due date exactly once between them (the ids dedupe what both pay), and
    /// never a date before its instant.
    func testPayersAtDifferentInstantsPayEveryDateOnce() {
        var rng = SplitMix64(seed: 366)
        for _ in 0..<40 {
            let z = zone(ScheduleTimeZoneTests.zones[Int(rng.next(in: 0...Int64(ScheduleTimeZoneTests.zones.count - 1)))])
            let cadence = ScheduleCadence.allCases[Int(rng.next(in: 0...2))]
            let terms = ScheduleTerms(firstDate: LocalDate(daysSinceEpoch: Int(rng.next(in: 18_000...21_000)))!, cadence: cadence, timeZone: z)
            let start = z.startOfDayMs(terms.firstDate) - 86_400_000
            var payers = [ScheduleState(terms: terms), ScheduleState(terms: terms)]
            var written = Set<LocalDate>()
            var t = start
            for _ in 0..<200 {
                t += rng.next(in: 0...(4 * 86_400_000))
                let i = Int(rng.next(in: 0...1))
                let plan = payers[i].plan(atMs: t, cap: Int(rng.next(in: 1...3)))
                for d in plan.pay { XCTAssertLessThanOrEqual(z.startOfDayMs(d), t) }
                written.formUnion(plan.pay)
                payers[i] = payers[i].settled(by: plan)
            }
            for i in 0...1 {
                while case let plan = payers[i].plan(atMs: t), !plan.pay.isEmpty {
                    written.formUnion(plan.pay)
                    payers[i] = payers[i].settled(by: plan)
                }
            }
            XCTAssertEqual(written.sorted(), terms.recurrence.dueDates(atMs: t, in: z), "\(z) \(terms.firstDate) \(cadence)")
        }
    }

    /// Random runs, pauses, resumes, back pay and edits of the amount, cadence, first date,
    /// zone and end date: dates are paid in strictly increasing order (so never twice), each
    /// at or after its due instant on the clocks of the terms that pay it, and nothing while paused.
    func testRandomEditsNeverPayADateTwiceOrEarly() {
        var rng = SplitMix64(seed: 2_026)
        let zones = ScheduleTimeZoneTests.zones.map(zone)
        var payments = 0, backPaid = 0
        for _ in 0..<60 {
            var terms = ScheduleTerms(firstDate: LocalDate(daysSinceEpoch: Int(rng.next(in: 19_000...21_000)))!,
                                      cadence: ScheduleCadence.allCases[Int(rng.next(in: 0...2))],
                                      timeZone: zones[Int(rng.next(in: 0...Int64(zones.count - 1)))])
            var t = terms.timeZone.startOfDayMs(terms.firstDate) + rng.next(in: -40...40) * 86_400_000
            let created = ScheduleState.created(terms, atMs: t)
            var state = created.state
            var paid = created.payWithNewTerms
            for d in paid { XCTAssertLessThanOrEqual(terms.dueInstantMs(d), t) }
            for _ in 0..<80 {
                t += rng.next(in: 0...(6 * 86_400_000))
                if rng.next(in: 0...3) > 0 {
                    let plan = state.plan(atMs: t)
                    if state.terms.paused { XCTAssertEqual(plan.pay, []) }
                    for d in plan.pay { XCTAssertLessThanOrEqual(state.terms.dueInstantMs(d), t) }
                    paid += plan.pay
                    state = state.settled(by: plan)
                    continue
                }
                let previous = state.terms
                switch rng.next(in: 0...5) {
                case 0: terms.paused.toggle()
                case 1: terms.cadence = ScheduleCadence.allCases[Int(rng.next(in: 0...2))]
                case 2: terms.firstDate = terms.firstDate.adding(days: Int(rng.next(in: -30...30)))!
                case 3: terms.timeZone = zones[Int(rng.next(in: 0...Int64(zones.count - 1)))]
                case 4: terms.endDate = rng.next(in: 0...1) == 0 ? nil : state.terms.firstDate.adding(days: Int(rng.next(in: 0...700)))
                default: break  // the amount only
                }
                let change = state.edited(to: terms, atMs: t, backPay: rng.next(in: 0...1) == 0)
                for d in change.payWithPreviousTerms { XCTAssertLessThanOrEqual(previous.dueInstantMs(d), t) }
                for d in change.payWithNewTerms { XCTAssertLessThanOrEqual(terms.dueInstantMs(d), t) }
                if previous.paused { XCTAssertEqual(change.payWithPreviousTerms, []) }
                if terms.paused { XCTAssertEqual(change.payWithNewTerms, []) }
                paid += change.payWithPreviousTerms + change.payWithNewTerms
                backPaid += change.payWithNewTerms.count
                state = change.state
            }
            XCTAssertEqual(paid, paid.sorted())
            XCTAssertEqual(Set(paid).count, paid.count)
            payments += paid.count
        }
        XCTAssertGreaterThan(payments, 500)
        XCTAssertGreaterThan(backPaid, 20)
    }

    func testPausingPaysWhatIsDueFirstAndHoldsTheRest() {
        let berlin = zone("Europe/Berlin")
        let terms = ScheduleTerms(firstDate: day("2026-03-01"), cadence: .weekly, timeZone: berlin)
        // The payer has not run since the first date: the pause pays the three dates due.
        let state = ScheduleState(terms: terms)
        var paused = terms
        paused.paused = true
        let pause = state.edited(to: paused, atMs: at("2026-03-16", 12, berlin))
        XCTAssertEqual(texts(pause.payWithPreviousTerms), ["2026-03-01", "2026-03-08", "2026-03-15"])
        XCTAssertEqual(pause.state.plan(atMs: at("2026-04-06", 12, berlin)), SchedulePlan(held: 3))
        // An edit that keeps it paused keeps them held; deleting pays none of them.
        var longer = paused
        longer.endDate = day("2027-01-01")
        let kept = pause.state.edited(to: longer, atMs: at("2026-04-06", 12, berlin))
        XCTAssertEqual(kept.state.plan(atMs: at("2026-04-06", 12, berlin)).held, 3)
        XCTAssertEqual(kept.skipped, 0)
        XCTAssertEqual(kept.state.deleted(atMs: at("2026-04-06", 12, berlin)).payWithPreviousTerms, [])
        // Resuming skips them, or pays them with the new terms when asked.
        let resumed = kept.state.edited(to: terms, atMs: at("2026-04-06", 12, berlin))
        XCTAssertEqual(resumed.skipped, 3)
        XCTAssertEqual(resumed.state.lastSettled, day("2026-04-05"))
        XCTAssertEqual(resumed.state.plan(atMs: at("2026-04-12", 0, berlin)).pay, [day("2026-04-12")])
        let backPaid = kept.state.edited(to: terms, atMs: at("2026-04-06", 12, berlin), backPay: true)
        XCTAssertEqual(texts(backPaid.payWithNewTerms), ["2026-03-22", "2026-03-29", "2026-04-05"])
        XCTAssertEqual(backPaid.skipped, 0)
        XCTAssertEqual(backPaid.state.plan(atMs: at("2026-04-12", 0, berlin)).pay, [day("2026-04-12")])
        // Back pay on a running schedule without a new calendar pays nothing more.
        XCTAssertEqual(resumed.state.edited(to: terms, atMs: at("2026-04-13", 12, berlin), backPay: true).payWithNewTerms, [])
    }

    func testEditsApplyFromTheNextUnpaidPeriod() {
        let utc = zone("UTC")
        let fridays = ScheduleTerms(firstDate: day("2026-12-04"), cadence: .weekly, timeZone: utc)
        let state = ScheduleState(terms: fridays, lastSettled: day("2026-12-11"))
        let thursday = ms("2026-12-24T12:00:00Z")
        // The payer missed 2026-12-18: the edit pays it with the previous terms.
        let amountOnly = state.edited(to: fridays, atMs: thursday)
        XCTAssertEqual(texts(amountOnly.payWithPreviousTerms), ["2026-12-18"])
        XCTAssertEqual(amountOnly.state.termsFrom, day("2026-12-25"))
        XCTAssertEqual(amountOnly.state.plan(atMs: ms("2026-12-25T00:00:00Z")).pay, [day("2026-12-25")])

        // Fridays to Wednesdays on a Thursday: the next Wednesday, or yesterday's with back pay.
        var wednesdays = fridays
        wednesdays.firstDate = day("2026-12-02")
        let moved = state.edited(to: wednesdays, atMs: thursday)
        XCTAssertEqual(texts(moved.payWithPreviousTerms), ["2026-12-18"])
        XCTAssertEqual(moved.payWithNewTerms, [])
        XCTAssertEqual(moved.state.termsFrom, day("2026-12-30"))
        XCTAssertEqual(texts(moved.state.plan(atMs: ms("2027-01-07T00:00:00Z")).pay), ["2026-12-30", "2027-01-06"])
        let movedBack = state.edited(to: wednesdays, atMs: thursday, backPay: true)
        XCTAssertEqual(texts(movedBack.payWithNewTerms), ["2026-12-23"])
        XCTAssertEqual(texts(movedBack.state.plan(atMs: ms("2027-01-07T00:00:00Z")).pay), ["2026-12-30", "2027-01-06"])

        // Weekly to monthly on the 31st.
        var monthly = fridays
        monthly.cadence = .monthly
        monthly.firstDate = day("2026-10-31")
        let m = state.edited(to: monthly, atMs: thursday)
        XCTAssertEqual(m.state.termsFrom, day("2026-12-31"))
        XCTAssertEqual(texts(m.state.plan(atMs: ms("2027-03-01T00:00:00Z")).pay), ["2026-12-31", "2027-01-31", "2027-02-28"])

        // An end date moved later after it passed: what it would have paid meanwhile is not back pay.
        var ended = fridays
        ended.endDate = day("2026-12-11")
        let endedState = ScheduleState(terms: ended, lastSettled: day("2026-12-11"))
        XCTAssertEqual(endedState.plan(atMs: thursday), SchedulePlan())
        var reopened = ended
        reopened.endDate = nil
        let r = endedState.edited(to: reopened, atMs: thursday)
        XCTAssertEqual(r.payWithPreviousTerms, [])
        XCTAssertEqual(r.state.plan(atMs: ms("2026-12-25T00:00:00Z")).pay, [day("2026-12-25")])
        XCTAssertEqual(texts(endedState.edited(to: reopened, atMs: thursday, backPay: true).payWithNewTerms), ["2026-12-18"])
    }

    /// A new zone alone neither skips a date nor pays one twice, when the edit falls between
    /// a date's start in one zone and in the other.
    func testAnotherZone() {
        let zurich = zone("Europe/Zurich"), newYork = zone("America/New_York")
        let terms = ScheduleTerms(firstDate: day("2026-12-04"), cadence: .weekly, timeZone: newYork)
        let state = ScheduleState(terms: terms, lastSettled: day("2026-12-04"))
        var moved = terms
        moved.timeZone = zurich
        // Thursday 23:30 UTC: Friday in Zurich, Thursday in New York. Friday was not due yet:
        // the next plan pays it, in Zurich already due.
        let t = ms("2026-12-10T23:30:00Z")
        let edit = state.edited(to: moved, atMs: t)
        XCTAssertEqual(edit.payWithPreviousTerms, [])
        XCTAssertEqual(edit.state.termsFrom, day("2026-12-11"))
        XCTAssertEqual(edit.state.plan(atMs: t).pay, [day("2026-12-11")])
        XCTAssertEqual(texts(state.edited(to: moved, atMs: t, backPay: true).payWithNewTerms), ["2026-12-11"])
        // The other way: Zurich had paid Friday; New York must not pay it again.
        let paid = ScheduleState(terms: moved, lastSettled: day("2026-12-11"))
        let back = paid.edited(to: terms, atMs: t, backPay: true)
        XCTAssertEqual(back.payWithNewTerms, [])
        XCTAssertEqual(back.state.plan(atMs: ms("2026-12-11T05:00:00Z")).pay, [])
        XCTAssertEqual(back.state.plan(atMs: ms("2026-12-18T05:00:00Z")).pay, [day("2026-12-18")])
    }

    func testEndDateIsIncluded() {
        let utc = zone("UTC")
        let terms = ScheduleTerms(firstDate: day("2027-01-31"), cadence: .monthly, timeZone: utc, endDate: day("2027-04-30"))
        let plan = ScheduleState(terms: terms).plan(atMs: ms("2027-12-01T00:00:00Z"))
        XCTAssertEqual(texts(plan.pay), ["2027-01-31", "2027-02-28", "2027-03-31", "2027-04-30"])
        XCTAssertNil(plan.nextDueDate)
        XCTAssertEqual(ScheduleState(terms: terms).plan(atMs: ms("2027-03-01T00:00:00Z")).nextDueDate, day("2027-03-31"))
        var before = terms
        before.endDate = day("2027-01-30")
        XCTAssertEqual(ScheduleState(terms: before).plan(atMs: ms("2027-12-01T00:00:00Z")), SchedulePlan())
        XCTAssertEqual(ScheduleState(terms: terms, lastSettled: .max).plan(atMs: .max), SchedulePlan())
    }

    func testDeletingPaysWhatIsDueAndNothingAfter() {
        let utc = zone("UTC")
        let terms = ScheduleTerms(firstDate: day("2026-12-04"), cadence: .everyTwoWeeks, timeZone: utc)
        let deleted = ScheduleState(terms: terms).deleted(atMs: ms("2027-01-01T00:00:00Z"))
        XCTAssertEqual(texts(deleted.payWithPreviousTerms), ["2026-12-04", "2026-12-18", "2027-01-01"])
    }

    func testMonthEndsInADaylightSavingZone() {
        let santiago = zone("America/Santiago")
        let terms = ScheduleTerms(firstDate: day("2026-08-06"), cadence: .monthly, timeZone: santiago)
        // 2026-09-06 begins at 01:00 (-03): due then, not an hour before.
        let state = ScheduleState(terms: terms, lastSettled: day("2026-08-06"))
        XCTAssertEqual(state.plan(atMs: ms("2026-09-06T03:59:59.999Z")).pay, [])
        XCTAssertEqual(state.plan(atMs: ms("2026-09-06T04:00:00Z")).pay, [day("2026-09-06")])
    }

    func testCodable() throws {
        let terms = ScheduleTerms(firstDate: day("2027-01-31"), cadence: .everyTwoWeeks, timeZone: zone("Australia/Lord_Howe"),
                                  endDate: day("2028-01-01"), paused: true)
        let state = ScheduleState(terms: terms, termsFrom: day("2027-02-14"), lastSettled: day("2027-01-31"))
        let data = try JSONEncoder().encode(state)
        XCTAssertEqual(try JSONDecoder().decode(ScheduleState.self, from: data), state)
        let json = String(decoding: data, as: UTF8.self)
        for part in [#""cadence":"everyTwoWeeks""#, #""firstDate":"2027-01-31""#, #""timeZone":"Australia\/Lord_Howe""#] {
            XCTAssertTrue(json.contains(part), json)
        }
    }
}
