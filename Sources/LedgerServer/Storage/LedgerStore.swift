import Foundation
import LedgerModel
import SQLiteKit

/// The ledger's SQL, shared by the REST handlers and the sync push.
enum LedgerStore {
    static let childColumns = "id, household_id, name, sort_order, archived, created_at, modified_at, modified_by, change_tag, balance_cents"
    static let txColumns = "id, household_id, child_id, amount_cents, note, source, created_at, recorded_at, author_account_id, reverses_id, reversed_by_id"

    // Forwarders for the code not yet moved onto the storage seam.
    typealias NewTransaction = LedgerServer.NewTransaction
    static func tag(_ seq: Int64) -> String { ChangeTag.of(seq) }
    static func nextSeq(_ db: SQLiteConnection, _ household: String) throws -> Int64 {
        try SQLiteLedgerTransaction.nextSeq(db, household)
    }
    static func clockSkew(_ stamps: [(String, Int64?)], now: Int64) -> APIError? {
        NewTransaction.clockSkew(stamps, now: now)?.apiError
    }

    // MARK: households

    static func householdJSON(_ db: SQLiteConnection, id: String, membership m: Membership) throws -> (JSONValue, String) {
        guard let r = try db.queryOne("SELECT id, name, currency, owner_account_id, created_at, modified_at, change_tag, shared FROM households WHERE id = ?", [.text(id)]) else {
            throw APIError.notFound("No such household.")
        }
        return (householdJSON(r, role: m.role.rawValue, permission: m.permission.rawValue), r.string(6))
    }

    static func householdJSON(_ r: SQLiteRow, role: String, permission: String) -> JSONValue {
        .object([
            "id": .string(r.string(0)), "name": .string(r.string(1)), "currency": .string(r.string(2)),
            "ownerAccountId": .string(r.string(3)),
            "createdAt": .string(Timestamp.format(ms: r.int(4))), "modifiedAt": .string(Timestamp.format(ms: r.int(5))),
            "changeTag": .string(r.string(6)), "role": .string(role), "permission": .string(permission),
            "shared": .bool(r.bool(7)),
        ])
    }

    // MARK: children

    static func child(_ r: SQLiteRow) -> Child {
        Child(id: r.string(0), householdId: r.string(1), name: r.string(2), sortOrder: r.int(3), archived: r.bool(4),
              createdAt: r.int(5), modifiedAt: r.int(6), modifiedBy: r.string(7), changeTag: r.string(8), balanceCents: r.int(9))
    }

    private static let findChildSQL = "SELECT \(childColumns) FROM children WHERE id = ? AND household_id = ?"
    static func findChild(_ db: SQLiteConnection, household: String, id: String) throws -> Child? {
        try db.queryOne(findChildSQL, [.text(id), .text(household)]).map(child)
    }

    private static let childBalanceSQL = "SELECT balance_cents FROM children WHERE id = ? AND household_id = ?"
    /// The cached balance of a child of `household`, nil when there is no such child.
    static func childBalance(_ db: SQLiteConnection, household: String, id: String) throws -> Int64? {
        try db.queryOne(childBalanceSQL, [.text(id), .text(household)]).map { $0.int(0) }
    }

    // MARK: transactions

    static func transaction(_ r: SQLiteRow) -> LedgerTransaction {
        LedgerTransaction(id: r.string(0), householdId: r.string(1), childId: r.string(2), amountCents: r.int(3),
                          note: r.string(4), source: TransactionSource(rawValue: r.string(5)) ?? .api,
                          createdAt: r.int(6), recordedAt: r.int(7), authorAccountId: r.string(8),
                          reversesId: r.optionalString(9), reversedById: r.optionalString(10))
    }

    private static let findTransactionSQL = "SELECT \(txColumns) FROM transactions WHERE household_id = ?1 AND reversal_id = ?2 AND id = ?3"
    /// The transaction `id` of `household`, found through its key, the reversal id of `id`
    /// (`reversalId`, computed when not given).
    static func findTransaction(_ db: SQLiteConnection, household: String, id: String,
                                reversalId: String? = nil) throws -> LedgerTransaction? {
        guard let key = reversalId ?? NewTransaction.reversalId(of: id) else { return nil }
        return try db.queryOne(findTransactionSQL, [.text(household), .text(key), .text(id)]).map(transaction)
    }

    private static let reservingSQL = "SELECT \(txColumns) FROM transactions WHERE household_id = ?1 AND reversal_id = ?2"
    /// The transaction of `household` whose reversal would have id `id`, if any.
    static func transactionReserving(_ db: SQLiteConnection, household: String, id: String) throws -> LedgerTransaction? {
        try db.queryOne(reservingSQL, [.text(household), .text(id)]).map(transaction)
    }

    enum InsertOutcome {
        case saved(LedgerTransaction, balance: Int64)
        case unchanged(LedgerTransaction, balance: Int64)
    }

    /// Why an insert was refused; each has the code API.md names.
    struct InsertRefusal: Error {
        var status: Int
        var code: String
        var detail: String
        var existing: LedgerTransaction?
        var apiError: APIError {
            var e = APIError(status, code, detail)
            if let existing { e.extra["current"] = existing.json }
            return e
        }
    }

    /// Insert-if-absent with every ledger rule: idempotent replay, id conflicts, reversal
    /// consistency, balance overflow. Updates the cached balance and the change feed.
    static func insertTransaction(_ db: SQLiteConnection, household: String, author: String,
                                  _ t: NewTransaction) throws -> InsertOutcome {
        if let existing = try findTransaction(db, household: household, id: t.id, reversalId: t.reversalId) {
            let same: Bool
            if let rev = t.reversesId {
                // Reversals are derived records: the same target, child and amount is the same record.
                same = existing.reversesId == rev && existing.childId == t.childId && existing.amountCents == t.amountCents
            } else {
                same = existing.reversesId == nil && existing.childId == t.childId && existing.amountCents == t.amountCents
                    && existing.note == t.note && existing.source == t.source
                    && (t.createdAt == nil || t.createdAt == existing.createdAt)
            }
            if same { return .unchanged(existing, balance: try childBalance(db, household: household, id: existing.childId) ?? 0) }
            throw InsertRefusal(status: 409, code: "id_conflict",
                                detail: "A different transaction with id \(t.id) already exists.", existing: existing)
        }
        if t.mayBeReservedId, let owner = try transactionReserving(db, household: household, id: t.id) {
            // That id belongs to the undo of `owner`: taking it would block the undo for ever.
            throw InsertRefusal(status: 409, code: "id_reserved",
                                detail: "Id \(t.id) is reserved for the reversal of transaction \(owner.id).")
        }
        guard let balance = try childBalance(db, household: household, id: t.childId) else {
            throw InsertRefusal(status: 404, code: "unknown_child", detail: "No child \(t.childId) in this household.")
        }
        if let rev = t.reversesId {
            guard let target = try findTransaction(db, household: household, id: rev) else {
                throw InsertRefusal(status: 404, code: "unknown_transaction", detail: "No transaction \(rev) to reverse.")
            }
            if target.reversesId != nil {
                throw InsertRefusal(status: 422, code: "not_reversible", detail: "A reversal cannot be reversed.")
            }
            if let by = target.reversedById {
                if let existing = try findTransaction(db, household: household, id: by) {
                    throw InsertRefusal(status: 409, code: "id_conflict", detail: "Transaction \(rev) is already reversed by \(by).", existing: existing)
                }
            }
            guard LedgerIDs.parse(rev).map({ LedgerIDs.reversalID(of: $0).lowercased }) == t.id else {
                throw InsertRefusal(status: 422, code: "reversal_id_mismatch", detail: "A reversal of \(rev) must have id \(LedgerIDs.reversalID(of: LedgerIDs.parse(rev)!).lowercased).")
            }
            guard t.amountCents == -target.amountCents, t.childId == target.childId else {
                throw InsertRefusal(status: 422, code: "reversal_amount_mismatch", detail: "A reversal must take back exactly \(target.amountCents) from the same child.")
            }
        }
        guard let newBalance = Cents.add(balance, t.amountCents) else {
            throw InsertRefusal(status: 422, code: "balance_overflow", detail: "This would take the balance outside the 64-bit range.")
        }
        var seq = try nextSeq(db, household)
        if t.reversesId != nil {
            // The target's new state (`reversedById`) and the reversal are two changes, in
            // that order, so the feed can page between them and honour any `limit`.
            // The target's key is its reversal id: this reversal's id (checked above).
            try db.run("UPDATE transactions SET reversed_by_id = ?1, seq = ?2 WHERE household_id = ?3 AND reversal_id = ?1",
                       [.text(t.id), .integer(seq), .text(household)])
            seq = try nextSeq(db, household)
        }
        let now = Timestamp.nowMs()
        try db.run("""
            INSERT INTO transactions (id, household_id, child_id, amount_cents, note, source, created_at, recorded_at, author_account_id,
                                      reverses_id, seq, reversal_id)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(t.id), .text(household), .text(t.childId), .integer(t.amountCents), .text(t.note), .text(t.source.rawValue),
                  .integer(t.createdAt ?? now), .integer(now), .text(author), .optionalText(t.reversesId), .integer(seq),
                  .text(t.reversalId)])
        try db.run("UPDATE children SET balance_cents = ? WHERE household_id = ? AND id = ?", [.integer(newBalance), .text(household), .text(t.childId)])
        let saved = LedgerTransaction(id: t.id, householdId: household, childId: t.childId, amountCents: t.amountCents,
                                      note: t.note, source: t.source, createdAt: t.createdAt ?? now, recordedAt: now,
                                      authorAccountId: author, reversesId: t.reversesId, reversedById: nil)
        return .saved(saved, balance: newBalance)
    }
}
