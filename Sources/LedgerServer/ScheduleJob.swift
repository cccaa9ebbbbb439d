import Dispatch
import Foundation
import LedgerCore
import LedgerModel
import Synchronization

/// The job that pays due schedules: once at start, then every `interval` seconds. A
/// household's due schedules are paid by a write of their own through the storage seam
/// (`payDue(household:schedules:now:)`), like any request's: its commit wakes the
/// household's long-polls and goes out in the change feed. One write at a time, paced
/// (`Pacing`), so requests' writes are served beside a catch-up. Over PostgreSQL one
/// transaction pays several households' writes (`LedgerStorage.householdsPerBackgroundWrite`,
/// `payDue(households:now:)`, their rows locked first in id order): fewer commits and statements.
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
    /// How the job shares the writer (SQLite) or the committers (PostgreSQL) with requests.
    package struct Pacing: Sendable, Equatable {
        /// Most schedules paid by one write (a household's due schedules in writes of up to
        /// this many): a request's write that queues behind one of the job's waits for little.
        package var perWrite = 100
        /// Most schedules paid by one write while requests' writes flow: one reached the
        /// writer the job shares with them (SQLite's) in the last `requestsRecently` seconds
        /// (`LedgerStorage.secondsSinceRequestWrite`). A request that arrives during one of
        /// the job's commits waits for it, so the commits are short then (at the cost of
        /// more of them); with no request in sight, `perWrite` a commit.
        package var perWriteBesideRequests = 20
        /// How recent a request's write must be for `perWriteBesideRequests`.
        package var requestsRecently = 0.5
        /// The share of the time the job's writes may take: after a write that took `d`
        /// seconds (from its submission to its durable answer) the job waits
        /// `d × (1 / share − 1)` before the next, so requests' writes find the writer free
        /// most of the time. 1: no pause.
        package var share = 0.5
        /// The longest pause between two of the job's writes.
        package var longestPause = 0.05

        package init() {}

        /// How many schedules the next write pays, the last request's write having reached
        /// the writer `sinceRequest` seconds ago (nil: never, or no shared writer).
        package func schedulesPerWrite(sinceRequest: Double?) -> Int {
            if let sinceRequest, sinceRequest < requestsRecently { return max(1, min(perWrite, perWriteBesideRequests)) }
            return max(1, perWrite)
        }
    }

    private let pacingState = Mutex(Pacing())
    /// The pacing of the runs that start from now on.
    package var pacing: Pacing {
        get { pacingState.withLock { $0 } }
        set { pacingState.withLock { $0 = newValue } }
    }

    private let storage: any LedgerStorage
    private let clock: @Sendable () -> Int64
    private let interval: Double
    private let logger: Logger
    private let stopSignal = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let running = Atomic<Bool>(false)
    /// Entered by `start` until its first run (the one at start) ends.
    private let startupRun = DispatchGroup()

    init(storage: any LedgerStorage, clock: @escaping @Sendable () -> Int64, interval: Double, logger: Logger) {
        self.storage = storage
        self.clock = clock
        self.interval = interval
        self.logger = logger
    }

    /// Runs the job now and then every `interval` seconds (0: only now) on a thread of its own.
    func start() {
        guard !running.exchange(true, ordering: .acquiringAndReleasing) else { return }
        startupRun.enter()
        let thread = Thread { [self] in
            var first = true
            repeat {
                let r = run()
                if first { startupRun.leave(); first = false }
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

    /// Waits until the run made at start has ended (tests that move the clock after a
    /// restart: that run reads the clock when it begins).
    package func waitForStartupRun() {
        startupRun.wait()
    }

    /// Stops the timer and waits for a run in progress to end.
    func stop() {
        guard running.exchange(false, ordering: .acquiringAndReleasing) else { return }
        stopSignal.signal()
        finished.wait()
    }

    /// Runs `body` as a background write and waits for its answer: the payments it wrote,
    /// nil when it failed. A background write is a transaction of its own (over SQLite the
    /// writer's background lane, taken only when no request's write is queued; over
    /// PostgreSQL on a worker, not a committer): a request's write never waits in a group
    /// commit's batch behind the job's many payments. It still locks its households first.
    private func writeAndWait(_ body: @escaping @Sendable (any LedgerWriting) throws -> Int) -> Int? {
        let outcome = Mutex<Int?>(nil)
        let done = DispatchSemaphore(value: 0)
        storage.backgroundWrite(body) { result in
            if case .success(let n) = result { outcome.withLock { $0 = n } }
            done.signal()
        }
        done.wait()
        return outcome.withLock { $0 }
    }

    /// Pays `ids` of `household` in one write and waits for its answer; when it fails,
    /// each schedule in a write of its own. Returns the payments written and the schedules
    /// whose write failed.
    private func payNow(_ household: String, _ ids: [String], at: Int64) -> (paid: Int, failed: Int) {
        if let n = writeAndWait({ w in try w.payDue(household: household, schedules: ids, now: at) }) { return (n, 0) }
        if ids.count == 1 { return (0, 1) }
        var total = (paid: 0, failed: 0)
        for id in ids {
            let one = payNow(household, [id], at: at)
            total.paid += one.paid
            total.failed += one.failed
        }
        return total
    }

    /// Pays the writes of `group` (each a household's schedules) in one write and waits for
    /// its answer; when it fails, each household's in a write of its own (`payNow`), so one
    /// household that cannot be paid (deleted meanwhile, a bad schedule) holds back no other.
    private func payNow(_ group: [(household: String, schedules: [String])], at: Int64) -> (paid: Int, failed: Int) {
        if let n = writeAndWait({ w in try w.payDue(households: group, now: at) }) { return (n, 0) }
        var total = (paid: 0, failed: 0)
        for item in group {
            let one = payNow(item.household, item.schedules, at: at)
            total.paid += one.paid
            total.failed += one.failed
        }
        return total
    }

    /// One run at `now` (default: the clock): pays every schedule with a date due then, the
    /// longest due first, and waits until every write is durable.
    @discardableResult
    package func run(now: Int64? = nil) -> Report {
        let at = now ?? clock()
        let pacing = self.pacing
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
            // One write per household (its schedules paid together, up to
            // `pacing.schedulesPerWrite`, chosen before each write from the requests' traffic:
            // one lock, one commit), one write at a time, paced (`pacing.share`); a write that
            // fails is tried again schedule by schedule, so one bad schedule holds back no other.
            var byHousehold: [String: [String]] = [:]
            for s in fresh { byHousehold[s.householdId, default: []].append(s.id) }
            // Paid `storage.householdsPerBackgroundWrite` households' writes at a time, in
            // one transaction (over PostgreSQL: one commit, one lock statement for them all);
            // a write of several that fails is tried again household by household.
            let together = max(1, storage.householdsPerBackgroundWrite)
            var pending: [(household: String, schedules: [String])] = []
            func write(_ group: [(household: String, schedules: [String])]) {
                let started = DispatchTime.now().uptimeNanoseconds
                let (n, failures) = group.count == 1
                    ? payNow(group[0].household, group[0].schedules, at: at)
                    : payNow(group, at: at)
                paid.add(n, ordering: .relaxed)
                failed.add(failures, ordering: .relaxed)
                let took = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
                let pause = min(pacing.longestPause, took * (1 / pacing.share - 1))
                if pause > 0 { Thread.sleep(forTimeInterval: pause) }
            }
            // In random order: processes running the job at once mostly take different
            // households, and one that comes second to a household finds it settled.
            for (household, ids) in byHousehold.shuffled() {
                var start = 0
                while start < ids.count {
                    let size = pacing.schedulesPerWrite(sinceRequest: storage.secondsSinceRequestWrite())
                    let end = min(ids.count, start + size)
                    pending.append((household, Array(ids[start..<end])))
                    start = end
                    if pending.count >= together {
                        write(pending)
                        pending.removeAll()
                    }
                }
            }
            if !pending.isEmpty { write(pending) }
            if due.count < ScheduleJob.batch { break }
        }
        report.payments = paid.load(ordering: .relaxed)
        report.failed = failed.load(ordering: .relaxed)
        return report
    }
}
