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
        init(household: String, account: String) { (self.household, self.account) = (household, account) }
    }

    private let condition = NSCondition()
    /// Requests not yet taken into a read.
    private var waiting: [Ticket] = []
    /// Whether a request is reading stamps now.
    private var reading = false

    /// `household`'s stamp for `account`, read after this call began.
    func stamp(household: String, account: String,
               read: ([(household: String, account: String)]) throws -> [HouseholdReadStamp?]) throws -> HouseholdReadStamp? {
        let ticket = Ticket(household: household, account: account)
        condition.lock()
        waiting.append(ticket)
        while ticket.outcome == nil {
            if reading {
                condition.wait()
                continue
            }
            reading = true
            let batch = waiting
            waiting.removeAll(keepingCapacity: true)
            condition.unlock()
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
            condition.lock()
            for (t, slot) in zip(batch, slots) {
                switch outcome {
                case .success(let stamps): t.outcome = .success(slot < stamps.count ? stamps[slot] : nil)
                case .failure(let e): t.outcome = .failure(e)
                }
            }
            reading = false
            condition.broadcast()
        }
        condition.unlock()
        return try ticket.outcome!.get()
    }
}
