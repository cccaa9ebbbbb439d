import Foundation
import LedgerModel

extension Wire.Child {
    /// The replica form; nil when a timestamp is malformed.
    func record() -> ChildRecord? {
        guard let created = Timestamp.parse(createdAt), let modified = Timestamp.parse(modifiedAt) else { return nil }
        return ChildRecord(id: id.lowercased(), name: name, sortOrder: sortOrder ?? 0, archived: archived,
                           createdAt: created, modifiedAt: modified, modifiedBy: modifiedBy, changeTag: changeTag)
    }
}

extension Wire.Transaction {
    /// The replica form; nil when a timestamp is malformed.
    func record() -> TransactionRecord? {
        guard let created = Timestamp.parse(createdAt) else { return nil }
        return TransactionRecord(id: id.lowercased(), childId: childId.lowercased(), amountCents: amountCents,
                                 note: note ?? "", source: source ?? "api", createdAt: created,
                                 recordedAt: recordedAt.flatMap(Timestamp.parse), authorAccountId: authorAccountId,
                                 reversesId: reversesId?.lowercased(), potId: Self.localPot(potId, childId: childId))
    }

    init(_ t: TransactionRecord) {
        self.init(id: t.id, householdId: nil, childId: t.childId, amountCents: t.amountCents, note: t.note,
                  source: t.source, createdAt: Timestamp.format(ms: t.createdAt),
                  recordedAt: t.recordedAt.map { Timestamp.format(ms: $0) }, authorAccountId: t.authorAccountId,
                  reversesId: t.reversesId, reversedById: nil, potId: t.potId)
    }

    /// The replica's pot of a transaction: nil for the child's default pot, however named.
    static func localPot(_ potId: String?, childId: String) -> String? {
        guard let pot = potId?.lowercased() else { return nil }
        guard let child = LedgerIDs.parse(childId.lowercased()) else { return pot }
        return pot == ScheduleIDs.defaultPot(childId: child).lowercased ? nil : pot
    }
}

extension Wire.PushChild {
    init(_ c: ChildRecord) {
        self.init(id: c.id, name: c.name, sortOrder: c.sortOrder, archived: c.archived,
                  createdAt: Timestamp.format(ms: c.createdAt), modifiedAt: Timestamp.format(ms: c.modifiedAt),
                  modifiedBy: c.modifiedBy, baseChangeTag: c.changeTag)
    }
}

extension Wire.PushTransaction {
    init(_ t: TransactionRecord) {
        self.init(id: t.id, childId: t.childId, amountCents: t.amountCents, note: t.note, source: t.source,
                  createdAt: Timestamp.format(ms: t.createdAt), reversesId: t.reversesId, potId: t.potId)
    }
}

extension Encodable {
    /// Compact JSON text of the value (for stored and rejected records).
    func jsonText() -> String {
        (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}

extension Wire.Schedule {
    /// The push (and export) form of a replica schedule.
    init(_ s: ScheduleRecord) {
        self.init(id: s.id, householdId: nil, childId: s.childId, kind: s.kind.rawValue, amountCents: s.amountCents,
                  rateBasisPoints: s.rateBasisPoints, cadence: s.cadence.rawValue, firstDate: s.firstDate.description,
                  timeZone: s.timeZone, endDate: s.endDate?.description, note: s.note, paused: s.paused,
                  split: s.split?.map { Wire.SplitPart(potId: $0.potId, percent: $0.percent) }, nextDueDate: nil,
                  deleted: s.deleted ? true : nil, backPay: s.backPay ? true : nil, changeTag: nil, baseChangeTag: s.changeTag,
                  createdAt: Timestamp.format(ms: s.createdAt), modifiedAt: Timestamp.format(ms: s.modifiedAt),
                  modifiedBy: s.modifiedBy)
    }

    /// The replica form, with a fresh payer state that pays from the server's next due date
    /// (`payer` replaces it); nil when a member is malformed.
    func record(payer: (termsFrom: LocalDate, lastSettled: LocalDate?)? = nil) -> ScheduleRecord? {
        guard let kind = ScheduleKind(rawValue: kind), let cadence = ScheduleCadence(rawValue: cadence),
              let first = LocalDate(firstDate), let created = Timestamp.parse(createdAt),
              let modified = Timestamp.parse(modifiedAt) else { return nil }
        let end = endDate.flatMap(LocalDate.init), next = nextDueDate.flatMap(LocalDate.init)
        if endDate != nil && end == nil || nextDueDate != nil && next == nil { return nil }
        // The server paid (or skipped) everything before its next due date; none left: nothing to pay.
        let from = payer?.termsFrom ?? next ?? .max
        return ScheduleRecord(id: id.lowercased(), childId: childId.lowercased(), kind: kind, amountCents: amountCents,
                              rateBasisPoints: rateBasisPoints, cadence: cadence, firstDate: first, timeZone: timeZone,
                              endDate: end, note: note ?? "", paused: paused,
                              split: split?.map { ScheduleSplit(potId: $0.potId.lowercased(), percent: $0.percent) },
                              nextDueDate: next, deleted: deleted ?? false, createdAt: created, modifiedAt: modified,
                              modifiedBy: modifiedBy, changeTag: changeTag, termsFrom: from, lastSettled: payer?.lastSettled)
    }
}

extension Wire.Pot {
    /// The push (and export) form of a replica pot.
    init(_ p: PotRecord) {
        self.init(id: p.id, householdId: nil, childId: p.childId, name: p.name, targetCents: p.targetCents,
                  targetDate: p.targetDate?.description, balanceCents: nil, archived: p.archived, changeTag: nil,
                  baseChangeTag: p.changeTag, createdAt: Timestamp.format(ms: p.createdAt),
                  modifiedAt: Timestamp.format(ms: p.modifiedAt), modifiedBy: p.modifiedBy)
    }

    /// The replica form; nil when a member is malformed.
    func record() -> PotRecord? {
        guard let created = Timestamp.parse(createdAt), let modified = Timestamp.parse(modifiedAt) else { return nil }
        let date = targetDate.flatMap(LocalDate.init)
        if targetDate != nil && date == nil { return nil }
        return PotRecord(id: id.lowercased(), childId: childId.lowercased(), name: name, targetCents: targetCents,
                         targetDate: date, archived: archived, createdAt: created, modifiedAt: modified,
                         modifiedBy: modifiedBy, changeTag: changeTag)
    }
}
