import Foundation
import LedgerModel

extension Ledger {
    /// Adds a child at the end of the sort order.
    @discardableResult
    public func addChild(named name: String) async throws -> Child {
        let record = try publicErrors { try service.addChild(name: name) }
        await didMutate()
        return Child(record)
    }

    /// Adds `cents` (> 0) to a child's balance, in pot `pot` (default: the child's default pot).
    @discardableResult
    public func add(cents: Int64, to childId: String, note: String = "", source: TransactionSource = .manual,
                    pot: String? = nil) async throws -> LedgerTransaction {
        try await record(for: childId) { service, child in
            try service.addMoney(childId: child, cents: cents, note: note, source: source, potId: pot)
        }
    }

    /// Takes `cents` (> 0) from a child's balance, from pot `pot` (default: the child's default
    /// pot); balances may go below zero.
    @discardableResult
    public func take(cents: Int64, from childId: String, note: String = "", source: TransactionSource = .manual,
                     pot: String? = nil) async throws -> LedgerTransaction {
        try await record(for: childId) { service, child in
            try service.takeMoney(childId: child, cents: cents, note: note, source: source, potId: pot)
        }
    }

    /// Undoes the child's newest transaction that is neither a reversal nor already undone.
    /// Returns the reversal.
    @discardableResult
    public func undoLast(for childId: String) async throws -> LedgerTransaction {
        try await record(for: childId) { service, child in try service.undoLast(childId: child) }
    }

    /// Undoes one transaction with its reversal (the same reversal on every device, so undoing
    /// on two devices at once undoes it once). Returns the reversal.
    @discardableResult
    public func reverse(_ transactionId: String) async throws -> LedgerTransaction {
        let record = try publicErrors { try service.undo(transactionId: transactionId) }
        await didMutate()
        return LedgerTransaction(record, isPending: try isQueued(record.id))
    }

    /// Renames a child.
    @discardableResult
    public func rename(_ childId: String, to name: String) async throws -> Child {
        let record = try publicErrors { try service.renameChild(id: try existingChild(childId), to: name) }
        await didMutate()
        return Child(record)
    }

    /// Archives (or, false, restores) a child; its history is kept either way.
    @discardableResult
    public func setArchived(_ archived: Bool, for childId: String) async throws -> Child {
        let record = try publicErrors { try service.setArchived(id: try existingChild(childId), archived) }
        await didMutate()
        return Child(record)
    }

    /// Moves a child to another place in the sort order.
    @discardableResult
    public func move(_ childId: String, toSortOrder sortOrder: Int64) async throws -> Child {
        let record = try publicErrors { try service.setSortOrder(id: try existingChild(childId), sortOrder) }
        await didMutate()
        return Child(record)
    }

    /// Writes a transaction of child `childId` with `write`, then tells observers and the scheduler.
    private func record(for childId: String, _ write: (LedgerService, String) throws -> TransactionRecord) async throws -> LedgerTransaction {
        let record = try publicErrors { try write(service, try existingChild(childId)) }
        await didMutate()
        return LedgerTransaction(record, isPending: try isQueued(record.id))
    }

    /// The stored id of child `id` (any case), or `.notFound`.
    func existingChild(_ id: String) throws -> String {
        let key = id.lowercased()
        guard try store.child(id: key) != nil else { throw LedgerError.notFound }
        return key
    }

    func isQueued(_ transactionId: String) throws -> Bool {
        try publicErrors { try store.pendingVersion(.transaction, id: transactionId) != nil }
    }

    /// After a local write: observers hear of it, automatic sync schedules a push.
    func didMutate() async {
        await publish()
        perform(scheduler.mutated(now: now()))
    }
}
