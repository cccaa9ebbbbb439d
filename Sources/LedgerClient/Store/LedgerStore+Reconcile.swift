import SQLiteKit

extension LedgerStore {
    /// The id of every local transaction with its child's (`child` only, when given).
    func transactionIds(child: String? = nil) throws -> [(childId: String, id: String)] {
        let rows = if let child {
            try db.query("SELECT child_id, id FROM transactions WHERE child_id = ?", [.text(child)])
        } else {
            try db.query("SELECT child_id, id FROM transactions")
        }
        return rows.map { (childId: $0.string(0), id: $0.string(1)) }
    }

    /// Whether the server went back in time and the device has not yet found everything it
    /// lacks back on it.
    func reconcileNeeded() throws -> Bool { try string(.reconcile) != nil }

    /// Records the server lacks that only another member's device can bring back (0 when none
    /// or no reconciliation runs).
    func reconcileWaiting() throws -> Int { Int(try string(.reconcileWaiting) ?? "") ?? 0 }
}
