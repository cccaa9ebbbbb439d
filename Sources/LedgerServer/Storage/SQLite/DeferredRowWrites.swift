import SQLiteKit

/// The two rows nearly every ledger write changes — its household's change sequence and
/// its child's balance — kept in memory for the writer's current group commit and written
/// once each, before COMMIT, instead of once per request. In a batch of thirty POSTs to one
/// child that is two UPDATEs instead of sixty (each about 12,000 instructions on the writer).
///
/// Only the fast paths of `SQLiteLedgerTransaction` (nextSeq, setBalance, balance) use the
/// values held here; every other statement a write runs goes through
/// `SQLiteLedgerTransaction.db`, which writes them out first, so no statement ever reads a
/// stale row. The write queue writes them out before COMMIT, before a savepoint, and before
/// a job that does not know of them (`WriteQueue.Job.defersRowWrites`), and drops them
/// with a rollback.
///
/// Used on the writer thread only.
final class DeferredRowWrites: WriteQueue.BatchState, @unchecked Sendable {
    private struct ChildKey: Hashable {
        let household: String
        let child: String
    }

    private struct Seq {
        /// The value the households row holds in this transaction.
        var written: Int64
        /// The last value handed out.
        var current: Int64
    }

    private var seqs: [String: Seq] = [:]
    private var balances: [ChildKey: Int64] = [:]
    /// Deferred changes made since the writer started (the queue compares it around a job
    /// to tell whether the job changed anything).
    private(set) var changeCount = 0

    /// Advances a household whose row this transaction already advanced; nil when it has
    /// not (the caller then runs the UPDATE and reports it with `seqWritten`).
    func advanceSeq(household: String) -> Int64? {
        guard var s = seqs[household] else { return nil }
        s.current += 1
        seqs[household] = s
        changeCount += 1
        return s.current
    }

    /// The households row now holds `seq` in this transaction.
    func seqWritten(household: String, seq: Int64) {
        seqs[household] = Seq(written: seq, current: seq)
    }

    func setBalance(household: String, child: String, cents: Int64) {
        balances[ChildKey(household: household, child: child)] = cents
        changeCount += 1
    }

    /// The balance set in this transaction and not yet written, if any.
    func balance(household: String, child: String) -> Int64? {
        balances[ChildKey(household: household, child: child)]
    }

    func flush(_ db: SQLiteConnection) throws {
        if seqs.isEmpty && balances.isEmpty { return }
        var advanced: [(String, Int64)] = []
        for (household, s) in seqs where s.current != s.written {
            try db.run("UPDATE households SET seq = ? WHERE id = ?", [.integer(s.current), .text(household)])
            advanced.append((household, s.current))
        }
        for (key, cents) in balances {
            try db.run("UPDATE children SET balance_cents = ? WHERE household_id = ? AND id = ?",
                       [.integer(cents), .text(key.household), .text(key.child)])
        }
        seqs.removeAll(keepingCapacity: true)
        balances.removeAll(keepingCapacity: true)
        for (household, seq) in advanced { SQLiteLedgerTransaction.rememberSeq(household: household, seq) }
    }

    func discard() {
        seqs.removeAll(keepingCapacity: true)
        balances.removeAll(keepingCapacity: true)
    }
}
