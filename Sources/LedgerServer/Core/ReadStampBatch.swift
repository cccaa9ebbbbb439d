import Dispatch
import Foundation
import LedgerCore

/// Stamp reads of concurrent requests, taken together into one round trip (as a group
/// commit takes writes): the first request to find nobody reading takes every request
/// waiting, reads their stamps in one statement (`LedgerStorage.readStamps`) and hands each
/// its stamp; requests that arrive meanwhile wait for the next such read, never for one
/// already sent (a read sent before a request arrived could miss a write its client saw
/// acknowledged). The same household and account asked twice in a batch is read once.
///
/// A request asks in one of two ways. `stamp(…)` blocks its thread until the stamp is read
/// (a worker's request). `stamp(…, then:)` returns at once (an event loop's request): the
/// stamp is handed to `then` on the thread that read it, and when nobody is reading, a
/// worker is started to read (`start`), which goes on reading batch after batch while
/// requests wait. So a request served from the event loop costs no thread of its own: the
/// loop hands it over, one reader reads the stamps of every such request that arrived
/// meanwhile and answers them through their connections.
final class ReadStampBatch: @unchecked Sendable {
    typealias Read = @Sendable ([(household: String, account: String)]) throws -> [HouseholdReadStamp?]
    typealias Outcome = Result<HouseholdReadStamp?, any Error>

    private final class Ticket {
        let household: String
        let account: String
        var outcome: Outcome?
        /// A blocked request's: signalled once, with its outcome or to read the next batch.
        let woken: DispatchSemaphore?
        /// A request that does not wait: given its outcome on the reading thread.
        let then: (@Sendable (Outcome) -> Void)?
        init(household: String, account: String, then: (@Sendable (Outcome) -> Void)?) {
            (self.household, self.account, self.then) = (household, account, then)
            woken = then == nil ? DispatchSemaphore(value: 0) : nil
        }
    }

    private let lock = NSLock()
    /// Requests not yet taken into a read.
    private var waiting: [Ticket] = []
    /// Whether a thread holds the reading turn: reads stamps now, or was chosen (and woken)
    /// to read the next batch.
    private var reading = false
    /// Whether a reader was handed to `start` and has not run yet. A blocked request never
    /// waits for it (it may be queued behind that very request, on a worker pool all of
    /// whose threads wait): it reads itself, and the reader, when it runs, finds the turn
    /// taken or nothing waiting.
    private var readerStarted = false

    /// `household`'s stamp for `account`, read after this call began.
    ///
    /// Each waiting request is woken once, and only when it has its stamp or is to read
    /// the next batch (one wake-up per request, not one per batch and waiter).
    func stamp(household: String, account: String, read: Read) throws -> HouseholdReadStamp? {
        let ticket = Ticket(household: household, account: account, then: nil)
        lock.lock()
        waiting.append(ticket)
        if reading {
            lock.unlock()
            ticket.woken!.wait()
            if let outcome = ticket.outcome { return try outcome.get() }
        } else {
            reading = true
            lock.unlock()
        }
        // Reading (`reading` stays true for this thread) until this ticket has its stamp.
        while true {
            readNext(read)
            if let outcome = ticket.outcome {
                handOver(read)
                return try outcome.get()
            }
        }
    }

    /// `household`'s stamp for `account`, read after this call began, handed to `then` on
    /// the thread that read it. When nobody is reading, `start` is given the work of reading
    /// (it must run it, on another thread: a worker).
    func stamp(household: String, account: String, read: @escaping Read,
               start: (@escaping @Sendable () -> Void) -> Void, then: @escaping @Sendable (Outcome) -> Void) {
        let ticket = Ticket(household: household, account: account, then: then)
        lock.lock()
        waiting.append(ticket)
        let idle = !reading && !readerStarted
        if idle { readerStarted = true }
        lock.unlock()
        guard idle else { return }
        start { [self] in
            lock.lock()
            readerStarted = false
            // A blocked request took the turn meanwhile: it reads what waits.
            if reading { lock.unlock(); return }
            reading = true
            lock.unlock()
            readNext(read)
            handOver(read)
        }
    }

    /// After a read: while requests wait, a blocked one is woken to read them (it needs a
    /// stamp read after it arrived anyway); when only handed-over requests wait, this thread
    /// reads them itself (a blocked request's thread too, though it has its stamp).
    private func handOver(_ read: Read) {
        while true {
            lock.lock()
            if waiting.isEmpty {
                reading = false
                lock.unlock()
                return
            }
            if let next = waiting.first(where: { $0.woken != nil }) {
                lock.unlock()
                next.woken!.signal()  // `reading` stays true for it
                return
            }
            lock.unlock()
            readNext(read)
        }
    }

    /// Takes every waiting request, reads their stamps in one statement and hands each its
    /// outcome (a blocked request is woken; a handed-over one's `then` runs here). The caller
    /// holds the reading turn.
    private func readNext(_ read: Read) {
        lock.lock()
        let batch = waiting
        waiting.removeAll(keepingCapacity: true)
        lock.unlock()
        guard !batch.isEmpty else { return }
        var index: [String: Int] = [:]
        var wanted: [(household: String, account: String)] = []
        var slots: [Int] = []
        slots.reserveCapacity(batch.count)
        wanted.reserveCapacity(batch.count)
        for t in batch {
            if batch.count == 1 { slots.append(0); wanted.append((t.household, t.account)); break }
            let key = t.household + " " + t.account
            if let i = index[key] { slots.append(i); continue }
            index[key] = wanted.count
            slots.append(wanted.count)
            wanted.append((t.household, t.account))
        }
        let outcome = Result { try read(wanted) }
        for (t, slot) in zip(batch, slots) {
            let o: Outcome = switch outcome {
            case .success(let stamps): .success(slot < stamps.count ? stamps[slot] : nil)
            case .failure(let e): .failure(e)
            }
            t.outcome = o
            if let then = t.then { then(o) }
        }
        // The blocked requests of the batch are woken once every outcome is set (the reader's
        // own ticket among them is not waiting on its semaphore: an extra signal is harmless,
        // the ticket is dropped).
        for t in batch { t.woken?.signal() }
    }
}
