import Dispatch
import Foundation
import LedgerCore

/// Stamp reads of concurrent requests, taken together into one round trip (as a group
/// commit takes writes): the first request to find nobody reading takes every request
/// waiting, reads their stamps in one statement (`LedgerStorage.readStamps`) on its own
/// thread and hands each its stamp; requests that arrive meanwhile wait for the next such
/// read, never for one already sent (a read sent before a request arrived could miss a
/// write its client saw acknowledged). The same household and account asked twice in a
/// batch is read once.
final class ReadStampBatch: @unchecked Sendable {
    private final class Ticket {
        let household: String
        let account: String
        var outcome: Result<HouseholdReadStamp?, any Error>?
        /// Signalled once: with its outcome, or to read the next batch.
        let woken = DispatchSemaphore(value: 0)
        init(household: String, account: String) { (self.household, self.account) = (household, account) }
    }

    private let lock = NSLock()
    /// Requests not yet taken into a read.
    private var waiting: [Ticket] = []
    /// Whether a request is reading stamps now (or was chosen to read the next batch).
    private var reading = false

    /// `household`'s stamp for `account`, read after this call began.
    ///
    /// Each waiting request is woken once, and only when it has its stamp or is to read
    /// the next batch (one wake-up per request, not one per batch and waiter).
    func stamp(household: String, account: String,
               read: ([(household: String, account: String)]) throws -> [HouseholdReadStamp?]) throws -> HouseholdReadStamp? {
        let ticket = Ticket(household: household, account: account)
        lock.lock()
        waiting.append(ticket)
        if reading {
            lock.unlock()
            ticket.woken.wait()
            if let outcome = ticket.outcome { return try outcome.get() }
            lock.lock()  // chosen to read the next batch (`reading` stayed true for it)
        } else {
            reading = true
        }
        let batch = waiting
        waiting.removeAll(keepingCapacity: true)
        lock.unlock()
        var index: [String: Int] = [:]
        var wanted: [(household: String, account: String)] = []
        var slots: [Int] = []
        slots.reserveCapacity(batch.count)
        for t in batch {
            let key = t.household + " " + t.account
            if let i = index[key] { slots.append(i); continue }
            index[key] = wanted.count
            slots.append(wanted.count)
            wanted.append((t.household, t.account))
        }
        let outcome = Result { try read(wanted) }
        for (t, slot) in zip(batch, slots) {
            switch outcome {
            case .success(let stamps): t.outcome = .success(slot < stamps.count ? stamps[slot] : nil)
            case .failure(let e): t.outcome = .failure(e)
            }
        }
        lock.lock()
        let next = waiting.first
        if next == nil { reading = false }
        lock.unlock()
        next?.woken.signal()
        for t in batch where t !== ticket { t.woken.signal() }
        return try ticket.outcome!.get()
    }
}
