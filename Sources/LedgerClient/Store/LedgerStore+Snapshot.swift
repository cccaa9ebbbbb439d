import LedgerModel
import SQLiteKit

/// What a snapshot reads besides the children, known from one statement, so that nothing is
/// read for a kind of record the replica holds none of.
struct SnapshotKinds: Sendable, Equatable {
    /// Requests waiting for a decision (of one child when asked).
    var pendingRequests: Int
    /// The replica holds pot records.
    var pots: Bool
    /// Some transaction names a pot (`pot_id` not NULL).
    var potMoney: Bool
    /// An allowance schedule not removed.
    var allowances: Bool
}

/// Reads of `Ledger.snapshot()`: one statement per kind for every child at once, so a
/// snapshot runs as many statements for twenty children as for one.
extension LedgerStore {
    static let snapshotKindsQuery = """
        SELECT (SELECT COUNT(*) FROM requests WHERE status = 'pending' AND (?1 IS NULL OR child_id = ?1)),
          EXISTS (SELECT 1 FROM pots),
          EXISTS (SELECT 1 FROM transactions INDEXED BY transactions_pot WHERE pot_id IS NOT NULL),
          EXISTS (SELECT 1 FROM schedules WHERE kind = 'allowance' AND deleted = 0)
        """

    /// The pending requests (of `childId` when given) and which kinds the replica holds.
    func snapshotKinds(childId: String?) throws -> SnapshotKinds {
        guard let r = try db.queryOne(Self.snapshotKindsQuery, [childId.map { .text($0) } ?? .null]) else {
            return SnapshotKinds(pendingRequests: 0, pots: false, potMoney: false, allowances: false)
        }
        return SnapshotKinds(pendingRequests: Int(r.int(0)), pots: r.bool(1), potMoney: r.bool(2), allowances: r.bool(3))
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
