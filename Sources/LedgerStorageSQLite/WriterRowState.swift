import LedgerCore
import SQLiteKit

/// What the writer keeps of a few rows between statements, so that the common write — a
/// POST of a transaction — runs three statements instead of six:
///
/// - The two rows nearly every ledger write changes, its household's change sequence and
///   its child's balance, are held in memory for the current group commit and written
///   once each, before COMMIT, instead of once per request. In a batch of thirty POSTs to
///   one child that is two UPDATEs instead of sixty.
/// - The access records (a household's owner and a caller's participation) the writer
///   read are remembered while nothing else is written: a stream of POSTs by the same
///   parent checks its access once. The household's ledger key, read with them, is kept
///   and forgotten with them, so a new transaction names its household by the key
///   instead of looking it up again.
///
/// Only the fast paths of `SQLiteLedgerTransaction` (nextSeq, setBalance, balance,
/// accessRecord) use what is kept here; every other statement a write runs goes through
/// `SQLiteLedgerTransaction.db`, which first writes the held rows and forgets the access
/// records, so no statement ever reads a stale row and no access check survives a change
/// that could touch it. The write queue writes the held rows out before COMMIT, before a
/// savepoint, and before a job that does not know of them (`WriteQueue.Job.defersRowWrites`),
/// and drops everything with a rollback; a commit by another connection (an admin command
/// on the same file) is noticed at the next batch (`PRAGMA data_version`).
///
/// Used on the writer thread only.
final class WriterRowState: WriteQueue.BatchState, @unchecked Sendable {
    private struct Seq {
        /// The value the households row holds in this transaction.
        var written: Int64
        /// The last value handed out.
        var current: Int64
    }

    /// Everything held for one household, in one object: a write finds it once (the last
    /// one found is kept) instead of hashing the household's id into four dictionaries,
    /// about six lookups a POST. Its children and accounts are few: searched in place.
    private final class Household {
        let key: HashedKey
        /// The households row's seq, once this transaction advanced it.
        var seq: Seq?
        /// Balances set in this transaction and not yet written, by child.
        var balances: [(child: HashedKey, cents: Int64)] = []
        /// Access records read since the last other statement, by account.
        var access: [(account: String, record: AccessRecord)] = []
        /// The household's ledger key, read with an access record (kept and forgotten
        /// with them).
        var ledgerKey: Int64?
        /// Whether it is listed in `changed` (a seq or a balance is held).
        var changed = false

        init(key: HashedKey) { self.key = key }
    }

    // Used by the writer thread alone, one access at a time: no run-time exclusivity checks.

    /// The last household's and child's keys (a write names the same ones in each call).
    @exclusivity(unchecked) private var householdKeys = KeyMemo()
    @exclusivity(unchecked) private var childKeys = KeyMemo()
    /// Households with anything held; an empty one is dropped when it empties.
    @exclusivity(unchecked) private var households: [HashedKey: Household] = [:]
    /// The household last found.
    @exclusivity(unchecked) private var last: Household?
    /// Households holding a seq or a balance, in the order of their first change.
    @exclusivity(unchecked) private var changed: [Household] = []
    /// Access records kept, over all households.
    @exclusivity(unchecked) private var accessCount = 0
    /// The database's data version when the last batch began (changes when another
    /// connection commits).
    @exclusivity(unchecked) private var dataVersion: Int64?
    /// Deferred changes made since the writer started (the queue compares it around a job
    /// to tell whether the job changed anything).
    @exclusivity(unchecked) private(set) var changeCount = 0

    /// The household's state: the last one found again without a hash; nil when nothing
    /// is held for it and `create` is false.
    private func household(_ id: String, create: Bool) -> Household? {
        let key = householdKeys.key(id)
        if let last, last.key == key { return last }
        if let found = households[key] {
            last = found
            return found
        }
        guard create else { return nil }
        let made = Household(key: key)
        households[key] = made
        last = made
        return made
    }

    private func noteChange(_ h: Household) {
        if !h.changed {
            h.changed = true
            changed.append(h)
        }
    }

    /// The set of the last household a write's sequence advanced, handed to each such
    /// write's `touched` (nearly always that one household): made and hashed once, not for
    /// every write (a set of one allocates and hashes, about 1,300 instructions).
    @exclusivity(unchecked) private var lastTouched: Set<String> = []

    /// A set of `household` alone.
    func touchedSet(_ household: String) -> Set<String> {
        if lastTouched.count == 1, lastTouched.first == household { return lastTouched }
        lastTouched = [household]
        return lastTouched
    }

    /// Advances a household whose row this transaction already advanced; nil when it has
    /// not (the caller then runs the UPDATE and reports it with `seqWritten`).
    func advanceSeq(household: String) -> Int64? {
        guard let h = self.household(household, create: false), var seq = h.seq else { return nil }
        seq.current += 1
        h.seq = seq
        changeCount += 1
        return seq.current
    }

    /// What `advanceSeq` would answer next, without handing it out; nil when this
    /// transaction has not advanced the household's row yet (`advanceSeq` would be nil too).
    func peekSeq(household: String) -> Int64? {
        self.household(household, create: false)?.seq.map { $0.current + 1 }
    }

    /// The households row now holds `seq` in this transaction.
    func seqWritten(household: String, seq: Int64) {
        let h = self.household(household, create: true)!
        h.seq = Seq(written: seq, current: seq)
        noteChange(h)
    }

    func setBalance(household: String, child: String, cents: Int64) {
        let h = self.household(household, create: true)!
        let key = childKeys.key(child)
        if let i = h.balances.firstIndex(where: { $0.child == key }) {
            h.balances[i].cents = cents
        } else {
            h.balances.append((key, cents))
        }
        noteChange(h)
        changeCount += 1
    }

    /// The balance set in this transaction and not yet written, if any.
    func balance(household: String, child: String) -> Int64? {
        guard let h = self.household(household, create: false), !h.balances.isEmpty else { return nil }
        let key = childKeys.key(child)
        return h.balances.first(where: { $0.child == key })?.cents
    }

    /// The access record read in this writer since the last other statement, if any.
    func accessRecord(household: String, account: String) -> AccessRecord? {
        guard let h = self.household(household, create: false) else { return nil }
        return h.access.first(where: { $0.account == account })?.record
    }

    /// The household's ledger key read with an access record still kept, if any.
    func ledgerKey(household: String) -> Int64? { self.household(household, create: false)?.ledgerKey }

    func remember(_ record: AccessRecord, household: String, account: String, ledgerKey: Int64?) {
        if accessCount >= 1024 { forgetAccess() }
        let h = self.household(household, create: true)!
        if let i = h.access.firstIndex(where: { $0.account == account }) {
            h.access[i].record = record
        } else {
            h.access.append((account, record))
            accessCount += 1
        }
        h.ledgerKey = ledgerKey
    }

    /// Drops every access record and ledger key, and the households left holding nothing.
    private func forgetAccess() {
        accessCount = 0
        if changed.isEmpty {
            households.removeAll(keepingCapacity: true)
            last = nil
            return
        }
        for h in households.values {
            h.access.removeAll()
            h.ledgerKey = nil
        }
        households = households.filter { $0.value.changed }
        if let l = last, !l.changed { last = nil }
    }

    func begin(_ db: SQLiteConnection) throws {
        let version = try db.queryOne("PRAGMA data_version")?.int(0)
        if version != dataVersion { forgetAccess() }
        dataVersion = version
    }

    func flush(_ db: SQLiteConnection, beforeOtherStatements: Bool) throws {
        if beforeOtherStatements && accessCount > 0 { forgetAccess() }
        if changed.isEmpty { return }
        var advanced: [(String, Int64)] = []
        for h in changed {
            if let s = h.seq, s.current != s.written {
                try db.run("UPDATE households SET seq = ? WHERE id = ?", [.integer(s.current), .text(h.key.string)])
                advanced.append((h.key.string, s.current))
            }
            for (child, cents) in h.balances {
                try SQLiteLedgerTransaction.writeBalance(db, household: h.key.string, child: child.string, cents: cents)
            }
        }
        for h in changed {
            h.seq = nil
            h.balances.removeAll()
            h.changed = false
            if h.access.isEmpty {
                households.removeValue(forKey: h.key)
                if last === h { last = nil }
            }
        }
        changed.removeAll(keepingCapacity: true)
        for (household, seq) in advanced { SQLiteLedgerTransaction.rememberSeq(household: household, seq) }
    }

    func discard() {
        households.removeAll(keepingCapacity: true)
        changed.removeAll(keepingCapacity: true)
        last = nil
        accessCount = 0
    }
}
