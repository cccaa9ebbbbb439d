import LedgerModel

/// A record's change tag for the change-sequence value that wrote it.
package enum ChangeTag {
    package static func of(_ seq: Int64) -> String { "v" + String(seq, radix: 36) }
}

/// A transaction to add, as a client described it (the REST create, a sync push, or a
/// reversal the server derives).
package struct NewTransaction: Sendable {
    package var id: String
    package var childId: String
    package var amountCents: Int64
    package var note: String
    package var source: TransactionSource
    package var createdAt: Int64?
    package var reversesId: String?
    /// The reversal id of `id` (SQLite's key for the row). Computed with the record, off
    /// the writer thread for requests.
    package let reversalId: String
    /// Whether a client chose `id`. A server-made id (random, or derived from an
    /// Idempotency-Key) is never the reversal id of another transaction.
    package var clientChosenId: Bool
    /// The pot it goes to; nil: the child's default pot (the rules store the default pot
    /// named by its id as nil too).
    package var potId: String?

    package init(id: String, childId: String, amountCents: Int64, note: String, source: TransactionSource,
         createdAt: Int64?, reversesId: String?, clientChosenId: Bool, potId: String? = nil) {
        self.potId = potId
        self.id = id
        self.childId = childId
        self.amountCents = amountCents
        self.note = note
        self.source = source
        self.createdAt = createdAt
        self.reversesId = reversesId
        self.reversalId = NewTransaction.reversalId(of: id) ?? ("not-a-uuid:" + id)
        self.clientChosenId = clientChosenId
    }

    /// Whether `id` may be the reversal id of a transaction this record does not reverse:
    /// a client-chosen UUID of version 5 (every reversal id is one) on a non-reversal.
    /// (A reversal's id is checked against its target's by `reversal_id_mismatch`.)
    package var mayBeReservedId: Bool {
        guard clientChosenId, reversesId == nil else { return false }
        let version = id.utf8[id.utf8.index(id.utf8.startIndex, offsetBy: 14)]
        return version == UInt8(ascii: "5")
    }

    /// The deterministic reversal id of transaction `id` (nil when `id` is not a UUID).
    package static func reversalId(of id: String) -> String? {
        LedgerIDs.parse(id).map { LedgerIDs.reversalID(of: $0, sha1: .openSSL).lowercased }
    }

    /// The record as stored in `household`, written by `author` at `now` (its creation time
    /// `now` unless the client gave one).
    package func record(household: String, author: String, now: Int64) -> LedgerTransaction {
        LedgerTransaction(id: id, householdId: household, childId: childId, amountCents: amountCents, note: note, source: source,
                          createdAt: createdAt ?? now, recordedAt: now, authorAccountId: author, reversesId: reversesId,
                          reversedById: nil, potId: potId)
    }

    /// The reversal of `target`, as a new transaction.
    package static func reversal(of target: LedgerTransaction) -> NewTransaction {
        NewTransaction(id: reversalId(of: target.id)!, childId: target.childId,
                       amountCents: -target.amountCents, note: "", source: target.source, createdAt: nil, reversesId: target.id,
                       clientChosenId: false, potId: target.potId)
    }

    /// The first of `stamps` (field name, value) more than 24 hours ahead of `now`, as the
    /// `clockSkew` refusal; nil when every one can be taken.
    package static func clockSkew(_ stamps: [(String, Int64?)], now: Int64) -> LedgerStorageError? {
        for (field, stamp) in stamps { if let skew = clockSkew(field, stamp, now: now) { return skew } }
        return nil
    }

    /// The `clockSkew` refusal when `stamp` (of `field`) is more than 24 hours ahead of
    /// `now`; nil otherwise. The one-stamp form: no array per call (a POST, a pushed record).
    package static func clockSkew(_ field: String, _ stamp: Int64?, now: Int64) -> LedgerStorageError? {
        guard let stamp, Timestamp.isTooFarAhead(stamp, now: now) else { return nil }
        return .clockSkew(field: field, now: now)
    }
}
