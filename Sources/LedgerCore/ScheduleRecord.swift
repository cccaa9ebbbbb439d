import Foundation
import LedgerModel

/// An allowance or interest schedule of a child, as stored: what it pays (`kind` and its
/// amount or rate) and what its payers keep (`state`: the calendar in force, the date it
/// pays from, the last date settled). Deleting keeps the row as a tombstone (`deleted`), so
/// the change feed can tell devices; a deleted schedule is never listed, read or paid.
package struct ScheduleRecord: Sendable, Equatable {
    package var id: String
    package var householdId: String
    package var childId: String
    package var kind: ScheduleKind
    /// What an allowance pays each period, in cents (0 for interest).
    package var amountCents: Int64
    /// What interest pays each period, in basis points of the balance (0 for an allowance).
    package var rateBasisPoints: Int64
    package var note: String
    package var state: ScheduleState
    /// How each payment is split across the child's pots (nil: all to the default pot).
    package var split: [SchedulePart]?
    package var deleted: Bool
    package var createdAt: Int64
    package var modifiedAt: Int64
    package var modifiedBy: String
    package var changeTag: String

    package init(id: String, householdId: String, childId: String, kind: ScheduleKind, amountCents: Int64,
                 rateBasisPoints: Int64, note: String, state: ScheduleState, split: [SchedulePart]? = nil, deleted: Bool = false,
                 createdAt: Int64, modifiedAt: Int64, modifiedBy: String, changeTag: String) {
        self.split = split
        (self.id, self.householdId, self.childId, self.kind) = (id, householdId, childId, kind)
        (self.amountCents, self.rateBasisPoints, self.note, self.state) = (amountCents, rateBasisPoints, note, state)
        (self.deleted, self.createdAt, self.modifiedAt) = (deleted, createdAt, modifiedAt)
        (self.modifiedBy, self.changeTag) = (modifiedBy, changeTag)
    }

    package var terms: ScheduleTerms { state.terms }

    /// The next date to pay (due already when the job has not reached it yet); nil when
    /// deleted, paused or ended.
    package var nextDueDate: LocalDate? { deleted ? nil : state.nextPayableDate }

    /// When `nextDueDate` is due (the job's index); nil when there is nothing to pay.
    package var dueAt: Int64? { nextDueDate.map(terms.dueInstantMs) }

    /// Whether `other` says the same as this record (what a device pushes or a POST repeats):
    /// kind, amounts, note, calendar, pause and deletion; not the state or the stamps.
    package func sameContent(as other: ScheduleRecord) -> Bool {
        childId == other.childId && kind == other.kind && amountCents == other.amountCents
            && rateBasisPoints == other.rateBasisPoints && note == other.note && terms == other.terms
            && deleted == other.deleted && split == other.split
    }

    /// The API JSON form: `{id, householdId, childId, kind, amountCents, rateBasisPoints,
    /// cadence, firstDate, timeZone, endDate, note, paused, split, nextDueDate, deleted,
    /// changeTag, createdAt, modifiedAt, modifiedBy}` (`amountCents` null for interest,
    /// `rateBasisPoints` null for an allowance).
    package var json: JSONValue {
        .object([
            "id": .string(id), "householdId": .string(householdId), "childId": .string(childId),
            "kind": .string(kind.rawValue),
            "amountCents": kind == .allowance ? .int(amountCents) : .null,
            "rateBasisPoints": kind == .interest ? .int(rateBasisPoints) : .null,
            "cadence": .string(terms.cadence.rawValue), "firstDate": .string(terms.firstDate.description),
            "timeZone": .string(terms.timeZone.identifier),
            "endDate": terms.endDate.map { .string($0.description) } ?? .null,
            "note": .string(note), "paused": .bool(terms.paused), "split": split.map(SchedulePart.json) ?? .null,
            "nextDueDate": nextDueDate.map { .string($0.description) } ?? .null,
            "deleted": .bool(deleted), "changeTag": .string(changeTag),
            "createdAt": .string(Timestamp.format(ms: createdAt)), "modifiedAt": .string(Timestamp.format(ms: modifiedAt)),
            "modifiedBy": .string(modifiedBy),
        ])
    }

    // MARK: stored form

    /// What the database keeps beside the columns it queries (household, id, child, seq,
    /// deletion, due instant): one JSON object, the same on both backends, written and read
    /// by hand (the payment job reads and writes one per schedule it pays).
    package var document: String {
        let o: JSONObject = [
            "kind": .string(kind.rawValue), "amountCents": .int(amountCents), "rateBasisPoints": .int(rateBasisPoints),
            "note": .string(note), "firstDate": .string(terms.firstDate.description), "cadence": .string(terms.cadence.rawValue),
            "timeZone": .string(terms.timeZone.identifier), "endDate": terms.endDate.map { .string($0.description) } ?? .null,
            "paused": .bool(terms.paused), "termsFrom": .string(state.termsFrom.description),
            "lastSettled": state.lastSettled.map { .string($0.description) } ?? .null,
            "createdAt": .int(createdAt), "modifiedAt": .int(modifiedAt), "modifiedBy": .string(modifiedBy),
            "changeTag": .string(changeTag),
        ]
        var d = o
        if let split { d["split"] = SchedulePart.json(split) }
        return JSONValue.object(d).serializedString
    }

    /// The record of a stored row; nil when its document does not decode (`check` says so).
    package init?(householdId: String, id: String, childId: String, deleted: Bool, document: String) {
        guard case .object(let o)? = try? JSONValue.parse(document),
              let kind = o["kind"]?.stringValue.flatMap(ScheduleKind.init(rawValue:)),
              let amountCents = o["amountCents"]?.intValue, let rateBasisPoints = o["rateBasisPoints"]?.intValue,
              let note = o["note"]?.stringValue,
              let firstDate = o["firstDate"]?.stringValue.flatMap(LocalDate.init),
              let cadence = o["cadence"]?.stringValue.flatMap(ScheduleCadence.init(rawValue:)),
              let zone = o["timeZone"]?.stringValue.flatMap({ try? ScheduleTimeZone(identifier: $0) }),
              let paused = o["paused"]?.boolValue,
              let termsFrom = o["termsFrom"]?.stringValue.flatMap(LocalDate.init),
              let createdAt = o["createdAt"]?.intValue, let modifiedAt = o["modifiedAt"]?.intValue,
              let modifiedBy = o["modifiedBy"]?.stringValue, let changeTag = o["changeTag"]?.stringValue else { return nil }
        let terms = ScheduleTerms(firstDate: firstDate, cadence: cadence, timeZone: zone,
                                  endDate: o["endDate"]?.stringValue.flatMap(LocalDate.init), paused: paused)
        var split: [SchedulePart]?
        if case .array(let parts)? = o["split"] {
            split = parts.compactMap { p in
                guard let pot = p["potId"]?.stringValue, let percent = p["percent"]?.intValue else { return nil }
                return SchedulePart(potId: pot, percent: Int(percent))
            }
        }
        self.init(id: id, householdId: householdId, childId: childId, kind: kind, amountCents: amountCents,
                  rateBasisPoints: rateBasisPoints, note: note,
                  state: ScheduleState(terms: terms, termsFrom: termsFrom,
                                       lastSettled: o["lastSettled"]?.stringValue.flatMap(LocalDate.init)),
                  split: split, deleted: deleted, createdAt: createdAt, modifiedAt: modifiedAt, modifiedBy: modifiedBy, changeTag: changeTag)
    }

    /// `household_id, id, child_id, deleted, doc` of a row.
    package init?<Row: StorageRow>(row r: Row, at c: Int = 0) {
        self.init(householdId: r.id(c), id: r.id(c + 1), childId: r.id(c + 2), deleted: r.bool(c + 3), document: r.string(c + 4))
    }
}

/// One pot's share of a schedule's payments (`Cents.split`): whole percents from 1 to 100,
/// each pot once, adding up to 100; the first pot takes what rounding leaves.
package struct SchedulePart: Sendable, Equatable {
    package var potId: String
    package var percent: Int

    package init(potId: String, percent: Int) { (self.potId, self.percent) = (potId, percent) }

    /// `[{potId, percent}]`.
    package static func json(_ parts: [SchedulePart]) -> JSONValue {
        .array(parts.map { .object(["potId": .string($0.potId), "percent": .int(Int64($0.percent))]) })
    }

    /// The parts of `amountCents`, by pot, in the split's order (zero parts included);
    /// nil when the split is not a valid one.
    package static func amounts(_ parts: [SchedulePart], of amountCents: Int64) -> [(potId: String, amountCents: Int64)]? {
        let percents = parts.compactMap { p in LedgerIDs.parse(p.potId).map { (potId: $0, percent: p.percent) } }
        guard percents.count == parts.count, let split = try? Cents.split(amountCents: amountCents, percents: percents) else {
            return nil
        }
        return zip(parts, split).map { (potId: $0.potId, amountCents: $1.amountCents) }
    }
}

/// What a change to a schedule paid with it (the answer says so): dates paid, dates held
/// while paused that a resume skipped, and dates beyond one change's limit never paid.
package struct ScheduleCatchUp: Sendable, Equatable {
    package var paid = 0
    package var skipped = 0
    package var dropped = 0

    package init(paid: Int = 0, skipped: Int = 0, dropped: Int = 0) {
        (self.paid, self.skipped, self.dropped) = (paid, skipped, dropped)
    }

    package var json: JSONValue { .object(["paid": .int(Int64(paid)), "skipped": .int(Int64(skipped)), "dropped": .int(Int64(dropped))]) }
}

/// A schedule written (or found already written) and what the write paid.
package struct ScheduleWrite: Sendable, Equatable {
    package var schedule: ScheduleRecord
    package var catchUp: ScheduleCatchUp
    /// false: the same schedule was already there (a repeated POST).
    package var created: Bool

    package init(schedule: ScheduleRecord, catchUp: ScheduleCatchUp = ScheduleCatchUp(), created: Bool) {
        (self.schedule, self.catchUp, self.created) = (schedule, catchUp, created)
    }
}

/// A schedule the job should look at: its household and id.
package struct DueSchedule: Sendable, Equatable, Hashable {
    package var householdId: String
    package var id: String

    package init(householdId: String, id: String) {
        (self.householdId, self.id) = (householdId, id)
    }
}
