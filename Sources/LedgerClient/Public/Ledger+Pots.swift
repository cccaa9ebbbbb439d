import Foundation
import LedgerModel

extension Ledger {
    /// Adds a pot to a child, with a goal of `target` cents by `date` when given.
    @discardableResult
    public func addPot(named name: String, for childId: String, target: Int64? = nil, by date: LocalDate? = nil) async throws -> Pot {
        let record = try publicErrors {
            try service.addPot(childId: try existingChild(childId), name: name, targetCents: target, targetDate: date)
        }
        await didMutate()
        return try publicErrors { try potSummary(record) }
    }

    /// Renames a pot (the default pot too).
    @discardableResult
    public func renamePot(_ potId: String, to name: String) async throws -> Pot {
        try await editPot(potId, LedgerService.PotEdit(name: name))
    }

    /// Archives (or, false, restores) a pot; its money and history stay.
    @discardableResult
    public func setArchived(_ archived: Bool, forPot potId: String) async throws -> Pot {
        try await editPot(potId, LedgerService.PotEdit(archived: archived))
    }

    /// Sets a pot's goal: `target` cents by `date` (nil removes that part of the goal).
    @discardableResult
    public func setGoal(target: Int64?, by date: LocalDate? = nil, for potId: String) async throws -> Pot {
        try await editPot(potId, LedgerService.PotEdit(targetCents: .some(target), targetDate: .some(date)))
    }

    /// Moves `cents` (> 0) from one pot of a child to another: one transfer, two transactions,
    /// written together here and uploaded together.
    @discardableResult
    public func move(cents: Int64, from fromPot: String, to toPot: String, note: String = "") async throws -> PotTransfer {
        let id = UUID()
        let (out, into) = try publicErrors { try service.transfer(cents: cents, from: fromPot, to: toPot, note: note, id: id) }
        await didMutate()
        return PotTransfer(id: id.lowercased, out: LedgerTransaction(out, isPending: try isQueued(out.id)),
                           in: LedgerTransaction(into, isPending: try isQueued(into.id)))
    }

    /// A child's pots with their balances, the default pot first.
    public func pots(of childId: String) async throws -> [PotSummary] {
        try publicErrors {
            try checkChildReadable(childId)
            guard let child = try store.child(id: childId.lowercased()) else { throw LedgerError.notFound }
            return try potSummaries(of: child)
        }
    }

    private func editPot(_ id: String, _ edit: LedgerService.PotEdit) async throws -> Pot {
        let record = try publicErrors { try service.editPot(id: id, edit) }
        await didMutate()
        return try publicErrors { try potSummary(record) }
    }

    func potSummary(_ pot: PotRecord) throws -> PotSummary {
        let defaultPot = LedgerService.defaultPot(of: pot.childId)
        let balance = try store.potBalances(childId: pot.childId, defaultPot: defaultPot)[pot.id] ?? 0
        return PotSummary(pot, balanceCents: balance, isDefault: pot.id == defaultPot)
    }

    /// The pots of `child` (the default one first, then by creation) with their balances;
    /// `balance`: the child's cached balance, when read already.
    func potSummaries(of child: ChildRecord, balance: Int64? = nil) throws -> [PotSummary] {
        let defaultPot = defaultPotId(of: child.id)
        let balances = try store.potBalances(childId: child.id, defaultPot: defaultPot, balance: balance)
        return Self.potSummaries(of: child, defaultPot: defaultPot, pots: try store.pots(childId: child.id), balances: balances)
    }

    /// The pots of `child` from its stored `pots` (oldest first) and the `balances` of its
    /// pots: the default one first (made when it has no record), then by creation, then any
    /// pot with money but no record here.
    static func potSummaries(of child: ChildRecord, defaultPot: String, pots stored: [PotRecord],
                             balances: [String: Int64]) -> [PotSummary] {
        var pots = stored
        if let i = pots.firstIndex(where: { $0.id == defaultPot }) { pots.insert(pots.remove(at: i), at: 0) }
        else { pots.insert(LedgerService.defaultPotRecord(of: child, id: defaultPot), at: 0) }
        var summaries = pots.map { PotSummary($0, balanceCents: balances[$0.id] ?? 0, isDefault: $0.id == defaultPot) }
        // Money in a pot this device has no record of yet still counts toward the child.
        for (id, cents) in balances where !pots.contains(where: { $0.id == id }) {
            summaries.append(PotSummary(id: id, childId: child.id, name: "", isDefault: false, archived: false,
                                        balanceCents: cents, targetCents: nil, targetDate: nil, progress: nil))
        }
        return summaries
    }

    /// The id of a child's default pot (`LedgerService.defaultPot`), worked out once per child.
    func defaultPotId(of childId: String) -> String {
        if let id = defaultPotIds[childId] { return id }
        let id = LedgerService.defaultPot(of: childId)
        defaultPotIds[childId] = id
        return id
    }
}

extension PotSummary {
    init(_ p: PotRecord, balanceCents: Int64, isDefault: Bool) {
        let progress = p.targetCents.map { target in target > 0 ? min(1, max(0, Double(balanceCents) / Double(target))) : 1 }
        self.init(id: p.id, childId: p.childId, name: p.name, isDefault: isDefault, archived: p.archived,
                  balanceCents: balanceCents, targetCents: p.targetCents, targetDate: p.targetDate, progress: progress)
    }
}
