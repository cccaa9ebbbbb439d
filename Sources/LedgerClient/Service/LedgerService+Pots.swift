import Foundation
import LedgerModel

/// Pots, goals and transfers between pots. Every child has a default pot,
/// `ScheduleIDs.defaultPot(childId:)`, which needs no record; transactions without a pot are in it.
extension LedgerService {
    /// What a pot edit changes; nil members stay as they are (`.some(nil)` removes a goal's part).
    struct PotEdit: Sendable, Equatable {
        var name: String?
        var archived: Bool?
        var targetCents: Int64??
        var targetDate: LocalDate??
    }

    /// The default pot's id of `childId`.
    static func defaultPot(of childId: String) -> String {
        LedgerIDs.parse(childId).map { ScheduleIDs.defaultPot(childId: $0).lowercased } ?? childId
    }

    /// Adds a pot to a child, with an optional goal.
    @discardableResult
    func addPot(childId: String, name: String, targetCents: Int64? = nil, targetDate: LocalDate? = nil,
                id: String = UUID().lowercased) throws -> PotRecord {
        let clean = try Self.validName(name)
        try Self.checkTarget(targetCents)
        return try store.transaction {
            try checkWritable()
            guard try store.child(id: childId) != nil else { throw ClientError.childNotFound(childId) }
            let t = now()
            let pot = PotRecord(id: id, childId: childId, name: clean, targetCents: targetCents, targetDate: targetDate,
                                archived: false, createdAt: t, modifiedAt: try stamp(), modifiedBy: try author())
            try store.upsert(pot)
            try queue(.pot, pot.id)
            return pot
        }
    }

    /// Renames, archives or sets the goal of a pot. The default pot gets its record on its
    /// first edit.
    @discardableResult
    func editPot(id: String, _ edit: PotEdit) throws -> PotRecord {
        let name = try edit.name.map(Self.validName)
        if let target = edit.targetCents { try Self.checkTarget(target) }
        return try store.transaction {
            try checkWritable()
            guard var pot = try existingPot(id) else { throw ClientError.potNotFound(id) }
            let before = pot
            if let name { pot.name = name }
            if let archived = edit.archived { pot.archived = archived }
            if let target = edit.targetCents { pot.targetCents = target }
            if let date = edit.targetDate { pot.targetDate = date }
            if pot == before, try store.pot(id: pot.id) != nil { return pot }
            pot.modifiedAt = try stamp()
            pot.modifiedBy = try author()
            try store.upsert(pot)
            try queue(.pot, pot.id)
            return pot
        }
    }

    /// Moves `cents` (> 0) between two pots of one child: one transfer, written as its two
    /// transactions (`ScheduleIDs.transferOut`/`transferIn` of the transfer's id) in one local
    /// transaction, and pushed in one batch.
    @discardableResult
    func transfer(cents: Int64, from: String, to: String, note: String = "",
                  id: UUID = UUID()) throws -> (out: TransactionRecord, in: TransactionRecord) {
        guard cents > 0 else { throw ClientError.invalid(field: "amount", message: "must be more than zero") }
        return try store.transaction {
            try checkWritable()
            guard let source = try existingPot(from) else { throw ClientError.potNotFound(from) }
            guard let target = try existingPot(to) else { throw ClientError.potNotFound(to) }
            guard source.childId == target.childId else {
                throw ClientError.invalid(field: "pot", message: "must belong to the same child as the pot the money comes from")
            }
            guard source.id != target.id else { throw ClientError.invalid(field: "pot", message: "must differ from the pot the money comes from") }
            let defaultPot = Self.defaultPot(of: source.childId)
            let t = now()
            let out = try record(childId: source.childId, amount: -cents, note: note, source: TransactionSource.manual.rawValue,
                                 id: ScheduleIDs.transferOut(id: id).lowercased, reverses: nil, createdAt: t,
                                 potId: source.id == defaultPot ? nil : source.id)
            let into = try record(childId: source.childId, amount: cents, note: note, source: TransactionSource.manual.rawValue,
                                  id: ScheduleIDs.transferIn(id: id).lowercased, reverses: nil, createdAt: t,
                                  potId: target.id == defaultPot ? nil : target.id)
            try store.recordTransfer(id: id.lowercased, outId: out.id, inId: into.id)
            return (out, into)
        }
    }

    /// The pot `id`: its record, or the default pot of a child without one.
    func existingPot(_ id: String) throws -> PotRecord? {
        let key = id.lowercased()
        if let pot = try store.pot(id: key) { return pot }
        for child in try store.children() where Self.defaultPot(of: child.id) == key {
            return Self.defaultPotRecord(of: child)
        }
        return nil
    }

    /// The default pot of `child` before it has a record of its own.
    /// `id`: the default pot's id, when worked out already.
    static func defaultPotRecord(of child: ChildRecord, id: String? = nil) -> PotRecord {
        PotRecord(id: id ?? defaultPot(of: child.id), childId: child.id, name: defaultPotName, targetCents: nil, targetDate: nil,
                  archived: false, createdAt: child.createdAt, modifiedAt: child.createdAt, modifiedBy: child.modifiedBy)
    }

    /// The name of a default pot nobody renamed.
    static let defaultPotName = "Main"

    private static func checkTarget(_ target: Int64?) throws {
        if let target, target <= 0 || target > Cents.maxTransactionMagnitude {
            throw ClientError.invalid(field: "target", message: "must be more than zero and at most 1000000000.00")
        }
    }
}
