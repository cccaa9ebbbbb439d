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
                                 reversesId: reversesId?.lowercased())
    }

    init(_ t: TransactionRecord) {
        self.init(id: t.id, householdId: nil, childId: t.childId, amountCents: t.amountCents, note: t.note,
                  source: t.source, createdAt: Timestamp.format(ms: t.createdAt),
                  recordedAt: t.recordedAt.map { Timestamp.format(ms: $0) }, authorAccountId: t.authorAccountId,
                  reversesId: t.reversesId, reversedById: nil)
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
                  createdAt: Timestamp.format(ms: t.createdAt), reversesId: t.reversesId)
    }
}

extension Encodable {
    /// Compact JSON text of the value (for stored and rejected records).
    func jsonText() -> String {
        (try? JSONEncoder().encode(self)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }
}
