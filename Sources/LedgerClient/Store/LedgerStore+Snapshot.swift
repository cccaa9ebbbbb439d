import LedgerModel
import SQLiteKit

/// What a snapshot reads first, in one statement: the household, the meta values of its mode
/// and status, the status's counts, and which kinds of record the replica holds, so that
/// nothing is read for a kind it holds none of.
struct SnapshotHead: Sendable, Equatable {
    var household: HouseholdRecord
    /// Requests waiting for a decision (the paired child's on a child's device).
    var pendingRequests: Int
    /// The replica holds pot records.
    var pots: Bool
    /// Some transaction names a pot (`pot_id` not NULL).
    var potMoney: Bool
    /// An allowance schedule not removed.
    var allowances: Bool
    /// Queued changes.
    var pending: Int
    /// Changes the server refused, not dismissed.
    var rejected: Bool
}

/// What a read holds already (`withSnapshotHead`), so that the store's reads of it during
/// that read run no statement.
struct ReadMemo {
    /// The values of `LedgerStore.memoKeys`, in that order.
    var meta: [String?]
    var pendingCount: Int
    var unmergedCount: Int
}

/// Reads of `Ledger.snapshot()`: one statement per kind of record for every child at once,
/// so a snapshot runs as many statements for twenty children as for one.
extension LedgerStore {
    /// The meta values every snapshot reads: its mode and its status (each a subquery of
    /// about 3k instructions; those read only in rarer states, such as `offlineSince`, are
    /// read when needed).
    static let memoKeys: [MetaKey] = [.childModeChildId, .phase, .attention, .lastOutcome, .lastSyncAt, .reconcile]

    static let snapshotHeadQuery = "SELECT id, name, currency, owner_account_id, change_tag, role, permission, shared, "
        + memoKeys.map { "(SELECT value FROM meta WHERE key = '\($0.rawValue)'), " }.joined()
        + """
        (SELECT COUNT(*) FROM pending), (SELECT COUNT(*) FROM unmerged),
          (SELECT COUNT(*) FROM requests r WHERE r.status = 'pending' AND r.child_id = coalesce(
            (SELECT value FROM meta WHERE key = 'child_mode_child_id'), r.child_id)),
          EXISTS (SELECT 1 FROM pots),
          EXISTS (SELECT 1 FROM transactions INDEXED BY transactions_pot WHERE pot_id IS NOT NULL),
          EXISTS (SELECT 1 FROM schedules WHERE kind = 'allowance' AND deleted = 0),
          EXISTS (SELECT 1 FROM rejected)
        FROM household LIMIT 1
        """

    /// Runs `body` with the snapshot's head read in one statement; meanwhile the store's reads
    /// of the meta values in `memoKeys`, of `pendingCount` and of `unmergedCount` answer from
    /// it. Call it inside a read (`readConsistently`) that writes nothing; a write through
    /// `set` forgets what it holds.
    func withSnapshotHead<T>(_ body: (SnapshotHead) throws -> T) throws -> T {
        guard let r = try db.queryOne(Self.snapshotHeadQuery) else {
            throw SQLiteError(code: 1, message: "store has no household row")
        }
        let household = HouseholdRecord(id: r.string(0), name: r.string(1), currency: r.string(2),
                                        ownerAccountId: r.optionalString(3), changeTag: r.optionalString(4),
                                        role: r.optionalString(5).flatMap(Role.init(rawValue:)),
                                        permission: r.optionalString(6).flatMap(Permission.init(rawValue:)), shared: r.bool(7))
        let m = Self.memoKeys.count + 8
        let head = SnapshotHead(household: household, pendingRequests: Int(r.int(m + 2)), pots: r.bool(m + 3),
                                potMoney: r.bool(m + 4), allowances: r.bool(m + 5), pending: Int(r.int(m)), rejected: r.bool(m + 6))
        let outer = readMemo
        readMemo = ReadMemo(meta: (8..<m).map { r.optionalString($0) }, pendingCount: head.pending, unmergedCount: Int(r.int(m + 1)))
        defer { readMemo = outer }
        return try body(head)
    }

    /// What the read in progress holds of `key`: `.some(value)` when `withSnapshotHead` read it.
    func memo(_ key: MetaKey) -> String?? {
        guard let readMemo, let i = Self.memoKeys.firstIndex(of: key) else { return nil }
        return .some(readMemo.meta[i])
    }

    static let everyPotQuery = "SELECT \(potColumns) FROM pots ORDER BY created_at, id"

    /// Every stored pot by child, each child's oldest first.
    func potsByChild() throws -> [String: [PotRecord]] {
        var pots: [String: [PotRecord]] = [:]
        for row in try db.query(Self.everyPotQuery) {
            let pot = Self.pot(from: row)
            pots[pot.childId, default: []].append(pot)
        }
        return pots
    }

    static let potMoneyQuery = """
        SELECT child_id, pot_id, SUM(amount_cents) FROM transactions INDEXED BY transactions_pot
        WHERE pot_id IS NOT NULL GROUP BY child_id, pot_id
        """

    /// The sum of the transactions that name a pot, by child and pot (the default pot's too
    /// when some name it): only the rows outside the default pots (`transactions_pot`).
    func potMoneyByChild() throws -> [String: [String: Int64]] {
        var money: [String: [String: Int64]] = [:]
        for row in try db.query(Self.potMoneyQuery) { money[row.string(0), default: [:]][row.string(1)] = row.int(2) }
        return money
    }

    /// The balance of each pot of a child from its cached `balance` and the sums of the
    /// transactions that name a pot (`money`, by pot): the default pot's is the balance less
    /// the others'.
    static func potBalances(defaultPot: String, balance: Int64, money: [String: Int64]) -> [String: Int64] {
        var balances: [String: Int64] = [:]
        var others: Int64 = 0
        for (pot, cents) in money where pot != defaultPot {
            balances[pot] = cents
            others += cents
        }
        balances[defaultPot] = balance - others
        return balances
    }

    static let allowancesQuery = "SELECT \(scheduleColumns) FROM schedules WHERE kind = 'allowance' AND deleted = 0 ORDER BY created_at, id"

    /// Every allowance schedule not removed, oldest first.
    func allowanceSchedules() throws -> [ScheduleRecord] {
        try db.query(Self.allowancesQuery).compactMap(Self.schedule)
    }
}
