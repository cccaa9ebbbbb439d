#if Postgres
import Foundation
import LedgerCore
import PostgresKit
import SystemKit

/// Group commit over PostgreSQL: writes that keep to one household (`LedgerStorage.write(household:…)`)
/// wait in one queue, and a few committer threads each take what is waiting — up to
/// `maxBatch` writes — into one transaction with one COMMIT.
///
/// Each write runs inside a SAVEPOINT of its own (queued with its first statement, so it
/// costs no round trip; `GroupCommit` drives the batch): a write that is refused, or loses
/// a race the database detects, is rolled back to it alone while the others commit. Before the first write, a batch locks
/// the rows of all its households in one statement (sent with BEGIN), in id order, so two
/// batches (in this process or another) never wait for each other in a cycle, and every
/// later statement reads what the locks' previous holders committed. A batch that fails
/// as a whole (the database unreachable, the COMMIT's outcome unknown) answers each of its
/// writes as such; a write that lost a race runs again in a later batch.
final class PostgresGroupCommit: @unchecked Sendable {
    /// One queued write, its value kept typed in a slot of its own.
    final class Job: @unchecked Sendable {
        let household: String
        /// What the write looks up first, to be read ahead with its batch's locks.
        let lookahead: WriteLookahead?
        var attempts = 1
        let run: (any LedgerWriting) throws -> Void
        let finish: (Result<Void, any Error>) -> Void

        init<T: Sendable>(household: String, lookahead: WriteLookahead? = nil,
                          body: @escaping @Sendable (any LedgerWriting) throws -> T,
                          completion: @escaping @Sendable (Result<T, any Error>) -> Void) {
            let slot = PostgresGroupCommit.Slot<T>()
            self.household = household
            self.lookahead = lookahead
            run = { slot.value = try body($0) }
            finish = { result in
                switch result {
                case .success:
                    guard let value = slot.value else {
                        completion(.failure(LedgerStorageError.unavailable(commitOutcomeUnknown: false)))
                        return
                    }
                    completion(.success(value))
                case .failure(let e): completion(.failure(e))
                }
            }
        }
    }

    /// A write's value between its run and its answer (both on one committer thread).
    final class Slot<T>: @unchecked Sendable { var value: T? }

    /// Most writes in one transaction (each is a subtransaction; PostgreSQL keeps up to 64
    /// of them per transaction in shared memory before it spills).
    let maxBatch: Int
    /// Most writes waiting; past it a write is answered `unavailable`.
    let maxWaiting: Int
    private let condition = NSCondition()
    private var waiting: [Job] = []
    private var stopped = false
    private let runBatch: @Sendable (PostgresGroupCommit, [Job]) -> Void
    private let committers: Int
    private var started = false

    /// - Parameter runBatch: runs one batch and finishes (or re-queues) each of its writes.
    init(committers: Int, maxBatch: Int = 32, maxWaiting: Int = 4096,
         runBatch: @escaping @Sendable (PostgresGroupCommit, [Job]) -> Void) {
        self.maxBatch = maxBatch
        self.maxWaiting = maxWaiting
        self.runBatch = runBatch
        self.committers = max(1, committers)
    }

    /// Queues a write; false when the queue is full (or stopped). The committer threads
    /// start with the first write.
    func submit(_ job: Job) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopped, waiting.count < maxWaiting else { return false }
        if !started {
            started = true
            for n in 0..<committers {
                let thread = Thread { [self] in
                    nameCurrentThread("kl-pg-commit-\(n)")
                    commit()
                }
                thread.start()
            }
        }
        waiting.append(job)
        // A write to a household a batch is committing waits for that batch's committer,
        // which takes it when the batch is done: no other committer is woken for it (it
        // would find nothing it may take, and the wake-up costs the caller's thread a
        // context switch).
        if !busy.contains(job.household) { condition.signal() }
        return true
    }

    /// Puts writes that lost a race back at the head of the queue.
    func retry(_ jobs: [Job]) {
        guard !jobs.isEmpty else { return }
        condition.lock()
        waiting.insert(contentsOf: jobs, at: 0)
        condition.broadcast()
        condition.unlock()
    }

    /// Stops the committers once the queue is empty.
    func stop() {
        condition.lock()
        stopped = true
        condition.broadcast()
        condition.unlock()
    }

    /// Households in a batch being committed here: their other writes wait for the next
    /// batch instead of for its row lock.
    private var busy: Set<String> = []

    /// The waiting writes of households no batch is committing, oldest first, up to
    /// `maxBatch` (removed from the queue); empty when there are none.
    private func takeBatch() -> [Job] {
        var batch: [Job] = []
        var rest: [Job] = []
        rest.reserveCapacity(waiting.count)
        for job in waiting {
            if batch.count < maxBatch && !busy.contains(job.household) { batch.append(job) } else { rest.append(job) }
        }
        guard !batch.isEmpty else { return [] }
        waiting = rest
        for job in batch { busy.insert(job.household) }
        return batch
    }

    private func commit() {
        while true {
            condition.lock()
            var batch = takeBatch()
            while batch.isEmpty {
                if stopped && waiting.isEmpty { condition.unlock(); return }
                condition.wait()
                batch = takeBatch()
            }
            // Writes left that another committer may take now (past `maxBatch`) wake one.
            if waiting.contains(where: { !busy.contains($0.household) }) { condition.signal() }
            condition.unlock()
            runBatch(self, batch)
            condition.lock()
            for job in batch { busy.remove(job.household) }
            // Writes that waited for these households are this thread's next batch (taken
            // at the top of the loop), not another committer's to be woken for.
            condition.unlock()
        }
    }
}
#endif
