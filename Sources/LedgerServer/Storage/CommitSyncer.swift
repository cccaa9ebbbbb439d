import Foundation
import Synchronization

/// Which of the writer's commits are durable, for answers built from reads. With
/// overlapped syncs (`WriteQueue.Durability.overlapped`) a commit is visible to readers as
/// soon as COMMIT returns, a little before its sync ends; an answer that may have read it
/// waits for that sync (`whenDurable`), so no client ever reads a write that a crash of the
/// machine could still take back — a feed cursor in particular never points past what the
/// disk holds.
final class DurabilityGate: Sendable {
    private let committed = Atomic<UInt64>(0)
    private let durable = Atomic<UInt64>(0)
    private let waiting = Mutex<[(commit: UInt64, action: @Sendable () -> Void)]>([])

    /// The writer, before each COMMIT: numbers that commit (1, 2, …).
    func beginCommit() -> UInt64 {
        committed.add(1, ordering: .sequentiallyConsistent).newValue
    }

    /// The newest commit a read that has just ended may have seen (taken after the read).
    var horizon: UInt64 { committed.load(ordering: .sequentiallyConsistent) }

    /// Whether commit `number` and every one before it are durable.
    func isDurable(_ number: UInt64) -> Bool { durable.load(ordering: .acquiring) >= number }

    /// Runs `action` once commit `number` is durable: at once if it is, otherwise on the
    /// syncing thread right after the sync.
    func whenDurable(_ number: UInt64, _ action: @escaping @Sendable () -> Void) {
        let now = waiting.withLock { w -> Bool in
            if durable.load(ordering: .acquiring) >= number { return true }
            w.append((number, action))
            return false
        }
        if now { action() }
    }

    /// Commits up to `number` are durable: runs what waited for them.
    func markDurable(_ number: UInt64) {
        durable.store(number, ordering: .releasing)
        let ready = waiting.withLock { w -> [@Sendable () -> Void] in
            guard !w.isEmpty else { return [] }
            var ready: [@Sendable () -> Void] = []
            w.removeAll { entry in
                guard entry.commit <= number else { return false }
                ready.append(entry.action)
                return true
            }
            return ready
        }
        for action in ready { action() }
    }

    /// Commits numbered so far, and how many of them are durable (tests, metrics).
    var counts: (committed: UInt64, durable: UInt64) {
        (committed.load(ordering: .acquiring), durable.load(ordering: .acquiring))
    }
}

/// The thread that makes the writer's commits durable when their syncs are deferred
/// (`WriteQueue.Durability.overlapped`): it syncs the WAL for whatever commits have queued
/// (one sync for all), then in commit order tells `afterEveryCommit` and `onCommit` of each,
/// releases the answers that read them, and has the jobs answered. The writer meanwhile
/// runs the jobs of its next commit.
final class CommitSyncer: Sendable {
    /// One commit (or, `number` and `summary` nil, a batch that failed, answered in turn).
    struct Ticket: @unchecked Sendable {
        let number: UInt64?
        let summary: WriteQueue.CommitSummary?
        let touched: Set<String>
        let answers: [(WriteQueue.Job, Result<Void, Error>)]
    }

    let gate: DurabilityGate
    private let sync: @Sendable () throws -> Void
    private let completions: DispatchQueue
    private let afterEveryCommit: @Sendable (WriteQueue.CommitSummary) -> Void
    private let onCommit: @Sendable (Set<String>) -> Void
    /// Called after each round (the writer may commit again).
    private let ended: @Sendable () -> Void

    private struct State {
        var tickets: [Ticket] = []
        var stopped = false
    }
    private let state = Mutex(State())
    /// Tickets queued or being synced.
    private let inFlight = Atomic<Int>(0)
    private let wake = DispatchSemaphore(value: 0)
    private let done = DispatchSemaphore(value: 0)

    init(sync: @escaping @Sendable () throws -> Void, gate: DurabilityGate, completions: DispatchQueue,
         afterEveryCommit: @escaping @Sendable (WriteQueue.CommitSummary) -> Void,
         onCommit: @escaping @Sendable (Set<String>) -> Void, ended: @escaping @Sendable () -> Void) {
        self.sync = sync
        self.gate = gate
        self.completions = completions
        self.afterEveryCommit = afterEveryCommit
        self.onCommit = onCommit
        self.ended = ended
        let t = Thread { [self] in self.run() }
        t.name = "kidledger-sync"
        t.start()
    }

    /// Whether a commit handed over is not yet durable and answered.
    var isBusy: Bool { inFlight.load(ordering: .acquiring) > 0 }

    func enqueue(_ ticket: Ticket) {
        inFlight.add(1, ordering: .acquiringAndReleasing)
        state.withLock { $0.tickets.append(ticket) }
        wake.signal()
    }

    /// Syncs and answers what is queued, then ends the thread.
    func stop() {
        state.withLock { $0.stopped = true }
        wake.signal()
        done.wait()
    }

    private func run() {
        while true {
            wake.wait()
            let (tickets, stopped) = state.withLock { s -> ([Ticket], Bool) in
                defer { s.tickets.removeAll(keepingCapacity: true) }
                return (s.tickets, s.stopped)
            }
            if !tickets.isEmpty { finish(tickets) }
            if stopped && state.withLock({ $0.tickets.isEmpty }) {
                done.signal()
                return
            }
        }
    }

    private func finish(_ tickets: [Ticket]) {
        if tickets.contains(where: { $0.summary != nil }) {
            do {
                try sync()
            } catch {
                // What the file holds is unknown (the kernel may have dropped the pages it
                // could not write) while the commits are already visible: going on could
                // acknowledge writes the disk does not have. Stop, and let SQLite recover
                // from what is on the disk at the next start, as PostgreSQL does.
                fatalError("kidledger: making the WAL durable failed (\(error)); stopping so that the database is recovered from the disk")
            }
        }
        for t in tickets {
            if let summary = t.summary {
                afterEveryCommit(summary)
                if !t.touched.isEmpty { onCommit(t.touched) }
            }
        }
        if let last = tickets.last(where: { $0.number != nil })?.number { gate.markDurable(last) }
        let answers = tickets.flatMap(\.answers)
        completions.async { for (job, r) in answers { job.completion(r) } }
        inFlight.subtract(tickets.count, ordering: .acquiringAndReleasing)
        ended()
    }
}
