import SQLiteKit

/// What the writer keeps of a few rows between statements, so that the common write — a
/// POST of a transaction — runs three statements instead of six:
///
/// - The two rows nearly every ledger write changes, its household's change sequence and
///   its child's balance, are held in memory for the current group commit and written
///   once each, before COMMIT, instead of once per request. In a batch of thirty POSTs to
///   one child that is two UPDATEs instead of sixty (each about 12,000 instructions).
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
    // The two keys hash one of their ids, not both, and that one's hash is computed once
    // (`HashedKey`); equality still compares both. A child's id names it alone in practice,
    // and the access records of one household are its few participants.
    private struct ChildKey: Hashable {
        let household: String
        let child: HashedKey
        func hash(into hasher: inout Hasher) { hasher.combine(child) }
    }

    private struct Seq {
        /// The value the households row holds in this transaction.
        var written: Int64
        /// The last value handed out.
        var current: Int64
    }

    private struct AccessKey: Hashable {
        let household: HashedKey
        let account: String
        func hash(into hasher: inout Hasher) { hasher.combine(household) }
    }

    // Used by the writer thread alone, one access at a time: no run-time exclusivity checks
    // (each cost about a hundred instructions, a few per write).

    /// The last household's and child's keys (a write names the same ones in each call).
    @exclusivity(unchecked) private var households = KeyMemo()
    @exclusivity(unchecked) private var children = KeyMemo()
    @exclusivity(unchecked) private var seqs: [HashedKey: Seq] = [:]
    @exclusivity(unchecked) private var balances: [ChildKey: Int64] = [:]
    @exclusivity(unchecked) private var access: [AccessKey: AccessRecord] = [:]
    /// Households' ledger keys, kept and forgotten with `access`.
    @exclusivity(unchecked) private var ledgerKeys: [HashedKey: Int64] = [:]
    /// The database's data version when the last batch began (changes when another
    /// connection commits).
    @exclusivity(unchecked) private var dataVersion: Int64?
    /// Deferred changes made since the writer started (the queue compares it around a job
    /// to tell whether the job changed anything).
    @exclusivity(unchecked) private(set) var changeCount = 0

    /// Advances a household whose row this transaction already advanced; nil when it has
    /// not (the caller then runs the UPDATE and reports it with `seqWritten`).
    func advanceSeq(household: String) -> Int64? {
        guard let i = seqs.index(forKey: households.key(household)) else { return nil }
        seqs.values[i].current += 1
        changeCount += 1
        return seqs.values[i].current
    }

    /// What `advanceSeq` would answer next, without handing it out; nil when this
    /// transaction has not advanced the household's row yet (`advanceSeq` would be nil too).
    func peekSeq(household: String) -> Int64? { seqs[households.key(household)].map { $0.current + 1 } }

    /// The households row now holds `seq` in this transaction.
    func seqWritten(household: String, seq: Int64) {
        seqs[households.key(household)] = Seq(written: seq, current: seq)
    }

    func setBalance(household: String, child: String, cents: Int64) {
        balances[ChildKey(household: household, child: children.key(child))] = cents
        changeCount += 1
    }

    /// The balance set in this transaction and not yet written, if any.
    func balance(household: String, child: String) -> Int64? {
        balances[ChildKey(household: household, child: children.key(child))]
    }

    /// The access record read in this writer since the last other statement, if any.
    func accessRecord(household: String, account: String) -> AccessRecord? {
        access[AccessKey(household: households.key(household), account: account)]
    }

    /// The household's ledger key read with an access record still kept, if any.
    func ledgerKey(household: String) -> Int64? { ledgerKeys[households.key(household)] }

    func remember(_ record: AccessRecord, household: String, account: String, ledgerKey: Int64?) {
        if access.count >= 1024 { forgetAccess() }
        let key = households.key(household)
        access[AccessKey(household: key, account: account)] = record
        ledgerKeys[key] = ledgerKey
    }

    private func forgetAccess() {
        access.removeAll(keepingCapacity: true)
        ledgerKeys.removeAll(keepingCapacity: true)
    }

    func begin(_ db: SQLiteConnection) throws {
        let version = try db.queryOne("PRAGMA data_version")?.int(0)
        if version != dataVersion { forgetAccess() }
        dataVersion = version
    }

    func flush(_ db: SQLiteConnection, beforeOtherStatements: Bool) throws {
        if beforeOtherStatements && !access.isEmpty { forgetAccess() }
        if seqs.isEmpty && balances.isEmpty { return }
        var advanced: [(String, Int64)] = []
        for (household, s) in seqs where s.current != s.written {
            try db.run("UPDATE households SET seq = ? WHERE id = ?", [.integer(s.current), .text(household.string)])
            advanced.append((household.string, s.current))
        }
        for (key, cents) in balances {
            try SQLiteLedgerTransaction.writeBalance(db, household: key.household, child: key.child.string, cents: cents)
        }
        seqs.removeAll(keepingCapacity: true)
        balances.removeAll(keepingCapacity: true)
        for (household, seq) in advanced { SQLiteLedgerTransaction.rememberSeq(household: household, seq) }
    }

    func discard() {
        forgetAccess()
        seqs.removeAll(keepingCapacity: true)
        balances.removeAll(keepingCapacity: true)
    }
}
