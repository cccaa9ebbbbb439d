import Dispatch
import Foundation
import LedgerCore
import LedgerModel
import Synchronization

/// The job that pays due schedules: once at start, then every `interval` seconds. Each
/// schedule is paid by a write of its own through the storage seam (`payDue`), like any
/// request's: its commit wakes the household's long-polls and goes out in the change feed.
/// Several processes may run it over one PostgreSQL: a write locks its household first,
/// so a second payer finds the dates settled, and a payment's deterministic id makes any
/// write of it after the first a no-op.
package final class ScheduleJob: Sendable {
    /// What one run did.
    package struct Report: Sendable, Equatable {
        /// Schedules looked at.
        package var schedules = 0
        /// Payments written.
        package var payments = 0
        /// Schedules whose write failed (paid by the next run).
        package var failed = 0
    }

    /// Schedules read per query.
    static let batch = 1000
    /// Writes in flight at once.
    static let inFlight = 256

    private let storage: any LedgerStorage
    private let clock: @Sendable () -> Int64
    private let interval: Double
    private let logger: Logger
    private let stopSignal = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let running = Atomic<Bool>(false)

    init(storage: any LedgerStorage, clock: @escaping @Sendable () -> Int64, interval: Double, logger: Logger) {
        self.storage = storage
        self.clock = clock
        self.interval = interval
        self.logger = logger
    }

    /// Runs the job now and then every `interval` seconds (0: only now) on a thread of its own.
    func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let thread = Thread { [self] in
            repeat {
                let r = run()
                if r.payments > 0 || r.failed > 0 {
                    logger.log(["event": "schedules_paid", "schedules": .int(Int64(r.schedules)),
                                "payments": .int(Int64(r.payments)), "failed": .int(Int64(r.failed))])
                }
            } while interval > 0 && stopSignal.wait(timeout: .now() + interval) == .timedOut
            if interval <= 0 { stopSignal.wait() }
            finished.signal()
        }
        thread.name = "schedules"
        thread.start()
    }

    /// Stops the timer and waits for a run in progress to end.
    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        stopSignal.signal()
        finished.wait()
    }

    /// Pays what is due at `at` on the schedules `ids` of `household`, in one write.
    private func pay(_ household: String, _ ids: [String], at: Int64,
                     _ done: @escaping @Sendable (Result<Int, any Error>) -> Void) {
        storage.write(household: household, { w in try w.payDue(household: household, schedules: ids, now: at) },
                      completion: done)
    }

    /// One run at `now` (default: the clock): pays every schedule with a date due then, the
    /// longest due first, and waits until every write is durable.
    @discardableResult
    package func run(now: Int64? = nil) -> Report {
        let at = now ?? clock()
        var report = Report()
        var seen = Set<DueSchedule>()
        let paid = Atomic<Int>(0), failed = Atomic<Int>(0)
        while true {
            let due: [DueSchedule]
            do { due = try storage.read { try $0.dueSchedules(atMs: at, limit: ScheduleJob.batch) } } catch {
                logger.log(["event": "schedules_error", "error": .string(String(describing: error))])
                break
            }
            // A schedule whose write failed stays due: it waits for the next run.
            let fresh = due.filter { seen.insert($0).inserted }
            if fresh.isEmpty { break }
            report.schedules += fresh.count
            // One write per household (its schedules paid together: one lock, one slot in
            // a group commit); a household whose write fails is tried again schedule by
            // schedule, so one bad schedule holds back no other.
            var byHousehold: [String: [String]] = [:]
            for s in fresh { byHousehold[s.householdId, default: []].append(s.id) }
            let group = DispatchGroup(), slots = DispatchSemaphore(value: ScheduleJob.inFlight)
            // In random order: processes running the job at once mostly take different
            // households, and one that comes second to a household finds it settled.
            for (household, ids) in byHousehold.shuffled() {
                slots.wait()
                group.enter()
                pay(household, ids, at: at) { result in
                    switch result {
                    case .success(let n): paid.add(n, ordering: .relaxed); slots.signal(); group.leave()
                    case .failure where ids.count > 1:
                        let each = DispatchGroup()
                        for id in ids {
                            each.enter()
                            self.pay(household, [id], at: at) { one in
                                switch one {
                                case .success(let n): paid.add(n, ordering: .relaxed)
                                case .failure: failed.add(1, ordering: .relaxed)
                                }
                                each.leave()
                            }
                        }
                        each.notify(queue: .global()) { slots.signal(); group.leave() }
                    case .failure:
                        failed.add(1, ordering: .relaxed); slots.signal(); group.leave()
                    }
                }
            }
            group.wait()
            if due.count < ScheduleJob.batch { break }
        }
        report.payments = paid.load(ordering: .relaxed)
        report.failed = failed.load(ordering: .relaxed)
        return report
    }
}
