import Foundation
import LedgerModel

extension LedgerStore {
    /// Gives the local ledger fresh ids: a new household id, a new id for every child and
    /// transaction (a reversal gets the deterministic id of its original's new id), with every
    /// reference rewritten and server tags cleared. Used when the ids belong to a household this
    /// account cannot write (a ledger kept after leaving, an export of someone else's household),
    /// so uploading it makes a new household instead of colliding with the old one. Balances and
    /// history are unchanged. Rebuilds the pending queue when `requeue` is true. Call inside a
    /// store transaction.
    func rekeyLedger(requeue: Bool) throws {
        var household = try household()
        household.id = UUID().lowercased
        household.ownerAccountId = nil
        household.changeTag = nil
        try saveHousehold(household, now: Timestamp.nowMs())

        var childIds: [String: String] = [:]
        for child in try children() {
            var fresh = child
            fresh.id = UUID().lowercased
            fresh.changeTag = nil
            try upsert(fresh)
            childIds[child.id] = fresh.id
        }
        let transactions = try allTransactions()
        var transactionIds: [String: String] = [:]
        for t in transactions where t.reversesId == nil { transactionIds[t.id] = UUID().lowercased }
        // A request gets a fresh id too, and its payment the id that belongs to it.
        var requestIds: [String: String] = [:]
        for r in try requests() {
            let fresh = UUID().lowercased
            requestIds[r.id] = fresh
            let payment = RequestRecord.paymentId(of: r.id)
            if transactionIds[payment] != nil { transactionIds[payment] = RequestRecord.paymentId(of: fresh) }
        }
        for t in transactions {
            guard let original = t.reversesId else { continue }
            if let fresh = transactionIds[original], let uuid = LedgerIDs.parse(fresh) {
                transactionIds[t.id] = LedgerIDs.reversalID(of: uuid).lowercased
            } else {
                transactionIds[t.id] = UUID().lowercased
            }
        }
        for t in transactions {
            try db.run("UPDATE transactions SET id = ?, child_id = ?, reverses_id = ?, recorded_at = NULL WHERE id = ?",
                       [.text(transactionIds[t.id] ?? t.id), .text(childIds[t.childId] ?? t.childId),
                        .optionalText(t.reversesId.map { transactionIds[$0] ?? $0 }), .text(t.id)])
        }
        // Schedules and pots keep their ids (ids are per household) but follow their child; a
        // default pot's record takes the new child's default pot id.
        for (old, fresh) in childIds {
            try db.run("UPDATE schedules SET child_id = ?, change_tag = NULL WHERE child_id = ?", [.text(fresh), .text(old)])
            try db.run("UPDATE pots SET child_id = ?, change_tag = NULL WHERE child_id = ?", [.text(fresh), .text(old)])
            if let oldId = LedgerIDs.parse(old), let freshId = LedgerIDs.parse(fresh) {
                try db.run("UPDATE pots SET id = ? WHERE id = ?", [.text(ScheduleIDs.defaultPot(childId: freshId).lowercased),
                                                                    .text(ScheduleIDs.defaultPot(childId: oldId).lowercased)])
            }
        }
        for (old, fresh) in requestIds {
            try db.run("""
                UPDATE requests SET id = ?1, child_id = COALESCE(?2, child_id), change_tag = NULL,
                  payment_id = CASE WHEN payment_id IS NULL THEN NULL ELSE ?3 END WHERE id = ?4
                """, [.text(fresh), .optionalText(childIds[try request(id: old)?.childId ?? ""]),
                      .text(RequestRecord.paymentId(of: fresh)), .text(old)])
        }
        for old in childIds.keys { try db.run("DELETE FROM children WHERE id = ?", [.text(old)]) }
        try db.execute("DELETE FROM deferred; DELETE FROM pending; DELETE FROM unmerged;")
        if requeue { try enqueueEverything() }
    }

    /// Queues every record for upload: children first, then pots, schedules and requests, then
    /// transactions, originals before reversals.
    func enqueueEverything() throws {
        for row in try db.query("SELECT id FROM children ORDER BY sort_order, created_at") {
            try enqueue(.child, id: row.string(0))
        }
        for row in try db.query("SELECT id FROM pots ORDER BY created_at, id") { try enqueue(.pot, id: row.string(0)) }
        for row in try db.query("SELECT id FROM schedules ORDER BY created_at, id") { try enqueue(.schedule, id: row.string(0)) }
        for row in try db.query("SELECT id FROM requests ORDER BY created_at, id") { try enqueue(.request, id: row.string(0)) }
        for row in try db.query("SELECT id FROM transactions ORDER BY reverses_id IS NOT NULL, created_at, rowid") {
            try enqueue(.transaction, id: row.string(0))
        }
    }
}
