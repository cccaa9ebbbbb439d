import Foundation
import LedgerModel

/// The only mutation boundary of a device. Each mutation writes the record and, when the
/// ledger is shared, its pending change in one SQLite transaction and returns at once —
/// offline works exactly like online. Balances are computed from the local transactions.
final class LedgerService {
    let store: LedgerStore
    /// Milliseconds since the epoch; replaceable for tests.
    var now: @Sendable () -> Int64

    init(store: LedgerStore, now: @escaping @Sendable () -> Int64 = { Timestamp.nowMs() }) {
        self.store = store
        self.now = now
    }

    // MARK: Reads

    /// Children with their balances; archived ones only when asked.
    func children(includeArchived: Bool = true) throws -> [ChildBalance] {
        try store.childSummaries().filter { includeArchived || !$0.child.archived }.map {
            ChildBalance(child: $0.child, balanceCents: $0.balanceCents)
        }
    }

    /// The persisted status. `signedIn`: whether this device holds a token (by default, whether
    /// the store holds one, as stores did before tokens moved to a credential store).
    func status(signedIn: Bool? = nil) throws -> SyncState {
        let pending = try store.pendingCount()
        if let reason = try store.attention() { return .attentionRequired(reason, pending: pending) }
        if try !(signedIn ?? (store.string(.token) != nil)) || (try store.lastOutcome()) == .unauthenticated {
            return .accountUnavailable(pending: pending)
        }
        switch try store.phase() {
        case .localOnly:
            return pending > 0 ? .changesPending(pending) : .synced
        case .sharing, .joining, .shared:
            if try store.lastOutcome() == .offline { return .offline(pending: pending) }
            if case .joining = try store.phase() { return .changesPending(pending) }
            return pending > 0 ? .changesPending(pending) : .synced
        }
    }

    // MARK: Children

    /// Adds a child at the end of the sort order.
    @discardableResult
    func addChild(name: String, id: String = UUID().lowercased) throws -> ChildRecord {
        let clean = try Self.validName(name)
        return try store.transaction {
            try checkWritable()
            let t = now()
            let order = try store.nextSortOrder()
            let child = ChildRecord(id: id, name: clean, sortOrder: order, archived: false, createdAt: t,
                                    modifiedAt: try stamp(), modifiedBy: try author())
            try store.upsert(child)
            try queue(.child, child.id)
            return child
        }
    }

    /// Renames a child.
    @discardableResult
    func renameChild(id: String, to name: String) throws -> ChildRecord {
        let clean = try Self.validName(name)
        return try editChild(id: id) { $0.name = clean }
    }

    /// Archives or unarchives a child; its history is kept either way.
    @discardableResult
    func setArchived(id: String, _ archived: Bool) throws -> ChildRecord {
        try editChild(id: id) { $0.archived = archived }
    }

    /// Moves a child to `sortOrder`.
    @discardableResult
    func setSortOrder(id: String, _ sortOrder: Int64) throws -> ChildRecord {
        try editChild(id: id) { $0.sortOrder = sortOrder }
    }

    private func editChild(id: String, _ change: (inout ChildRecord) -> Void) throws -> ChildRecord {
        try store.transaction {
            try checkWritable()
            guard var child = try store.child(id: id) else { throw ClientError.childNotFound(id) }
            let before = child
            change(&child)
            if child == before { return child }
            child.modifiedAt = try stamp()
            child.modifiedBy = try author()
            try store.upsert(child)
            try queue(.child, child.id)
            return child
        }
    }

    // MARK: Money

    /// Adds `cents` (> 0) to a child's balance.
    @discardableResult
    func addMoney(childId: String, cents: Int64, note: String = "", source: TransactionSource = .manual,
                         id: String = UUID().lowercased, potId: String? = nil) throws -> TransactionRecord {
        guard cents > 0 else { throw ClientError.invalid(field: "amount", message: "must be more than zero") }
        try Self.checkSource(source)
        return try record(childId: childId, amount: cents, note: note, source: source.rawValue, id: id, reverses: nil,
                          potId: try potOfChild(potId, childId: childId))
    }

    /// Takes `cents` (> 0) from a child's balance; balances may go negative.
    @discardableResult
    func takeMoney(childId: String, cents: Int64, note: String = "", source: TransactionSource = .manual,
                          id: String = UUID().lowercased, potId: String? = nil) throws -> TransactionRecord {
        guard cents > 0 else { throw ClientError.invalid(field: "amount", message: "must be more than zero") }
        try Self.checkSource(source)
        return try record(childId: childId, amount: -cents, note: note, source: source.rawValue, id: id, reverses: nil,
                          potId: try potOfChild(potId, childId: childId))
    }

    /// Interest depends on the balance at its due instant: only the server pays it.
    private static func checkSource(_ source: TransactionSource) throws {
        if source == .interest { throw ClientError.invalid(field: "source", message: "interest is paid by the server only") }
    }

    /// The replica's form of pot `potId` of `childId`: nil for none or the default pot.
    private func potOfChild(_ potId: String?, childId: String) throws -> String? {
        guard let potId else { return nil }
        guard let pot = try existingPot(potId), pot.childId == childId else { throw ClientError.potNotFound(potId) }
        return pot.id == Self.defaultPot(of: childId) ? nil : pot.id
    }

    /// Undoes the child's newest transaction that is neither a reversal nor reversed.
    @discardableResult
    func undoLast(childId: String) throws -> TransactionRecord {
        guard let child = try store.child(id: childId) else { throw ClientError.childNotFound(childId) }
        guard let target = try store.newestUndoableTransaction(childId: childId) else { throw ClientError.nothingToUndo(child.name) }
        return try undo(transactionId: target)
    }

    /// Undoes one transaction with its deterministic reversal; returns the existing reversal
    /// when it was already undone (here or on another device).
    @discardableResult
    func undo(transactionId: String) throws -> TransactionRecord {
        guard let original = try store.transaction(id: transactionId.lowercased()) else {
            throw ClientError.transactionNotFound(transactionId)
        }
        if original.reversesId != nil { throw ClientError.notReversible }
        if let existing = try store.reversal(of: original.id) { return existing }
        guard let uuid = LedgerIDs.parse(original.id) else { throw ClientError.transactionNotFound(transactionId) }
        return try record(childId: original.childId, amount: -original.amountCents, note: "",
                          source: original.source, id: LedgerIDs.reversalID(of: uuid).lowercased, reverses: original.id,
                          potId: original.potId)
    }

    /// Writes one transaction and queues it; `createdAt` defaults to now, `potId` nil is the
    /// child's default pot.
    func record(childId: String, amount: Int64, note: String, source: String, id: String,
                reverses: String?, createdAt: Int64? = nil, potId: String? = nil) throws -> TransactionRecord {
        if amount.magnitude > UInt64(Cents.maxTransactionMagnitude) {
            throw ClientError.invalid(field: "amount", message: "must be at most 1000000000.00")
        }
        let cleanNote: String
        switch Validation.note(note) {
        case .success(let n): cleanNote = n
        case .failure(let e): throw ClientError.invalid(field: "note", message: e.message)
        }
        return try store.transaction {
            try checkWritable()
            guard try store.child(id: childId) != nil else { throw ClientError.childNotFound(childId) }
            guard Cents.add(try store.balance(childId: childId), amount) != nil else { throw ClientError.balanceOverflow }
            let tx = TransactionRecord(id: id, childId: childId, amountCents: amount, note: cleanNote, source: source,
                                       createdAt: createdAt ?? now(), authorAccountId: try store.string(.accountId),
                                       reversesId: reverses, potId: potId)
            try store.upsert(tx)
            try queue(.transaction, tx.id)
            return tx
        }
    }

    // MARK: Helpers

    static func validName(_ name: String) throws -> String {
        switch Validation.name(name) {
        case .success(let n): return n
        case .failure(let e): throw ClientError.invalid(field: "name", message: e.message)
        }
    }

    /// Refuses edits while shared editing is frozen or a join is being completed.
    func checkWritable() throws {
        if try store.string(.childModeChildId) != nil { throw ClientError.childDevice }
        let phase = try store.phase()
        if case .joining = phase { throw ClientError.joinInProgress }
        if phase.queuesChanges, let reason = try store.attention() { throw ClientError.frozen(reason) }
        if phase.queuesChanges, try store.household().permission == .readOnly { throw ClientError.frozen(.readOnly) }
    }

    func queue(_ kind: RecordKind, _ id: String) throws {
        if try store.phase().queuesChanges { try store.enqueue(kind, id: id) }
    }

    func stamp() throws -> Int64 {
        LWW.stamp(now: now(), newestSeen: try store.newestSeenModifiedAt())
    }

    func author() throws -> String {
        if let account = try store.string(.accountId) { return account }
        return try store.string(.deviceId) ?? ""
    }
}
