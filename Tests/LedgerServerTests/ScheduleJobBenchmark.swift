import Foundation
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import XCTest

/// The payment job over 20,000 schedules that all fall due in one minute (midnight in one
/// zone): the CPU time of the process while one run pays them, and the run's wall time.
/// Runs only with KIDLEDGER_BENCH_SCHEDULES=N (bench/schedule-job.sh); prints one line.
final class ScheduleJobBenchmark: XCTestCase {
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(Int32(RUSAGE_SELF.rawValue), &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    func testOneMinutesCatchUp() throws {
        guard let n = ProcessInfo.processInfo.environment["KIDLEDGER_BENCH_SCHEDULES"].flatMap(Int.init), n > 0 else {
            throw XCTSkip("set KIDLEDGER_BENCH_SCHEDULES=N to run")
        }
        let clock = TestClock("2027-01-04T12:00:00Z")
        let s = try TestServer.scheduled(clock)
        defer { s.stop() }
        let (account, _) = s.signup("bench")
        let storage = s.app.services.storage
        let zone = try ScheduleTimeZone(identifier: "Europe/Zurich")
        let terms = ScheduleTerms(firstDate: LocalDate("2027-01-05")!, cadence: .weekly, timeZone: zone)
        // 100 schedules to a household (one child), as many households as it takes.
        let perHousehold = 100
        for _ in 0..<(n + perHousehold - 1) / perHousehold {
            try storage.writeAndWait { w in
                let h = UUID().lowercased, kid = UUID().lowercased
                _ = try w.createHousehold(id: h, name: "Bench", currency: "EUR", owner: account, ifAbsentOnly: true, now: clock.now())
                _ = try w.createChild(household: h, account: account, id: kid, name: "Kid", sortOrder: nil, now: clock.now())
                for _ in 0..<perHousehold {
                    _ = try w.createSchedule(household: h, account: account,
                                             ScheduleDraft(id: UUID().lowercased, childId: kid, kind: .allowance, amountCents: 500,
                                                           rateBasisPoints: 0, note: "", terms: terms), now: clock.now())
                }
            }
        }
        clock.set("2027-01-04T23:01:00Z")  // a minute after midnight in Zurich: every schedule due
        let cpu = Self.cpuSeconds(), wall = Date()
        let report = s.app.scheduleJob.run()
        let cpuUsed = Self.cpuSeconds() - cpu, wallUsed = Date().timeIntervalSince(wall)
        XCTAssertEqual(report.payments, (n + perHousehold - 1) / perHousehold * perHousehold)
        XCTAssertEqual(report.failed, 0)
        XCTAssertEqual(s.app.scheduleJob.run().payments, 0)
        print(String(format: "schedule-job: %d schedules due, %d paid; CPU %.3f s (%.1f µs each), wall %.3f s, backend %@",
                     report.schedules, report.payments, cpuUsed, cpuUsed * 1e6 / Double(max(1, report.payments)), wallUsed,
                     TestServer.postgresURL == nil ? "SQLite" : "PostgreSQL"))
    }
}
