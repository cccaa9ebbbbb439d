import Foundation
import LedgerModel
import Synchronization

/// A pot of a child (Spend, Save, Give…) with an optional goal (`targetCents`,
/// `targetDate`). Every child has a default pot, `ScheduleIDs.defaultPot(childId:)`, which
/// has no row until it is first edited (it is called "Main" until then); a transaction
/// names its pot (`LedgerTransaction.potId`, nil for the default pot). A pot's balance is
/// the sum of its transactions, read with it; a child's balance is the sum of its pots.
/// Deleting keeps the row as a tombstone (`deleted`) for the change feed.
package struct PotRecord: Sendable, Equatable {
    package var id: String
    package var householdId: String
    package var childId: String
    package var name: String
    package var targetCents: Int64?
    package var targetDate: LocalDate?
    package var archived: Bool
    package var deleted: Bool
    package var createdAt: Int64
    package var modifiedAt: Int64
    package var modifiedBy: String
    package var changeTag: String
    /// The sum of its transactions when it was read (not stored).
    package var balanceCents: Int64

    package init(id: String, householdId: String, childId: String, name: String, targetCents: Int64?, targetDate: LocalDate?,
                 archived: Bool, deleted: Bool = false, createdAt: Int64, modifiedAt: Int64, modifiedBy: String,
                 changeTag: String, balanceCents: Int64 = 0) {
        (self.id, self.householdId, self.childId, self.name) = (id, householdId, childId, name)
        (self.targetCents, self.targetDate, self.archived, self.deleted) = (targetCents, targetDate, archived, deleted)
        (self.createdAt, self.modifiedAt, self.modifiedBy) = (createdAt, modifiedAt, modifiedBy)
        (self.changeTag, self.balanceCents) = (changeTag, balanceCents)
    }

    /// The name of a default pot nobody renamed.
    package static let defaultName = "Main"
    /// The change tag of a default pot that has no row yet.
    package static let defaultChangeTag = "v0"
    /// A list position before every stored pot (0001-01-01, the nil UUID): the second page
    /// when the first held only the default pot.
    package static let beforeEveryPot = TimeAndIdPosition(time: -62_135_596_800_000, id: "00000000-0000-0000-0000-000000000000")

    /// The default pot's id of `childId` (lowercase); nil when `childId` is not a UUID.
    /// Remembered per child (`DefaultPotIds`): every answer naming a transaction of the
    /// default pot names this id, and a UUIDv5 is a SHA-1 and a few strings.
    package static func defaultId(child childId: String) -> String? {
        if let known = DefaultPotIds.known(childId) { return known }
        guard let id = LedgerIDs.parse(childId).map({ ScheduleIDs.defaultPot(childId: $0, sha1: .openSSL).lowercased })
        else { return nil }
        DefaultPotIds.remember(id, of: childId)
        return id
    }

    /// The pot `t` belongs to as the API names it: the same as `t.resolvedPotId`, with the
    /// default pot's id remembered.
    package static func resolvedId(of t: LedgerTransaction) -> String {
        t.potId ?? defaultId(child: t.childId) ?? t.childId
    }

    /// The default pot of `child` before anyone edited it.
    package static func defaultPot(of child: Child) -> PotRecord {
        PotRecord(id: defaultId(child: child.id) ?? child.id, householdId: child.householdId, childId: child.id,
                  name: defaultName, targetCents: nil, targetDate: nil, archived: false, createdAt: child.createdAt,
                  modifiedAt: child.createdAt, modifiedBy: child.modifiedBy, changeTag: defaultChangeTag)
    }

    /// Whether this is its child's default pot.
    package var isDefault: Bool { PotRecord.defaultId(child: childId) == id }

    /// What a client may set, compared (a repeated POST, a pushed pot): not the stamps.
    package func sameContent(as other: PotRecord) -> Bool {
        childId == other.childId && name == other.name && targetCents == other.targetCents && targetDate == other.targetDate
            && archived == other.archived && deleted == other.deleted
    }

    /// How far the balance is towards the goal, from 0 to 1 (nil without a target amount),
    /// in ten-thousandths: what `progress` says.
    package var progressBasisPoints: Int64? {
        guard let targetCents else { return nil }
        guard targetCents > 0 else { return 10_000 }
        if balanceCents <= 0 { return 0 }
        if balanceCents >= targetCents { return 10_000 }
        let (high, low) = balanceCents.multipliedFullWidth(by: 10_000)
        return Int64(targetCents.dividingFullWidth((high, low)).quotient)
    }

    /// The API JSON form: `{id, householdId, childId, name, targetCents, targetDate,
    /// balanceCents, progress, archived, deleted, changeTag, createdAt, modifiedAt,
    /// modifiedBy}`; `progress` (0 to 1, four decimals, rounded down) is null without a target.
    package var json: JSONValue {
        .object([
            "id": .string(id), "householdId": .string(householdId), "childId": .string(childId), "name": .string(name),
            "targetCents": targetCents.map { .int($0) } ?? .null,
            "targetDate": targetDate.map { .string($0.description) } ?? .null,
            "balanceCents": .int(balanceCents),
            "progress": progressBasisPoints.map { .number(PotRecord.decimal($0)) } ?? .null,
            "archived": .bool(archived), "deleted": .bool(deleted), "changeTag": .string(changeTag),
            "createdAt": .string(Timestamp.format(ms: createdAt)), "modifiedAt": .string(Timestamp.format(ms: modifiedAt)),
            "modifiedBy": .string(modifiedBy),
        ])
    }

    /// `bp` ten-thousandths as a JSON number: 0, 1, 0.5, 0.1234.
    static func decimal(_ bp: Int64) -> String {
        if bp % 10_000 == 0 { return String(bp / 10_000) }
        var fraction = String(bp % 10_000)
        fraction = String(repeating: "0", count: 4 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(bp / 10_000)." + fraction
    }

    /// `household_id, id, child_id, name, target_cents, target_date, archived, deleted,
    /// created_at, modified_at, modified_by, change_tag` of a row (the balance is read apart).
    package init<Row: StorageRow>(row r: Row, at c: Int = 0) {
        self.init(id: r.id(c + 1), householdId: r.id(c), childId: r.id(c + 2), name: r.string(c + 3),
                  targetCents: r.isNull(c + 4) ? nil : r.int(c + 4),
                  targetDate: r.optionalString(c + 5).flatMap(LocalDate.init), archived: r.bool(c + 6),
                  deleted: r.bool(c + 7), createdAt: r.time(c + 8), modifiedAt: r.time(c + 9), modifiedBy: r.id(c + 10),
                  changeTag: r.string(c + 11))
    }
}

/// A pot as a client describes it (a POST, or a device's push).
package struct PotDraft: Sendable, Equatable {
    package var id: String
    package var childId: String
    package var name: String
    package var targetCents: Int64?
    package var targetDate: LocalDate?
    package var archived: Bool

    package init(id: String, childId: String, name: String, targetCents: Int64?, targetDate: LocalDate?, archived: Bool = false) {
        (self.id, self.childId, self.name, self.targetCents, self.targetDate, self.archived) =
            (id, childId, name, targetCents, targetDate, archived)
    }
}

/// What a PATCH of a pot changes (nil: unchanged; `.some(nil)` removes a goal's part).
package struct PotPatch: Sendable, Equatable {
    package var name: String?
    package var targetCents: Int64??
    package var targetDate: LocalDate??
    package var archived: Bool?

    package init(name: String? = nil, targetCents: Int64?? = nil, targetDate: LocalDate?? = nil, archived: Bool? = nil) {
        (self.name, self.targetCents, self.targetDate, self.archived) = (name, targetCents, targetDate, archived)
    }
}

/// A pot written (or found already written).
package struct PotWrite: Sendable, Equatable {
    package var pot: PotRecord
    /// false: the same pot was already there (a repeated POST), or nothing changed.
    package var created: Bool

    package init(pot: PotRecord, created: Bool) { (self.pot, self.created) = (pot, created) }
}

/// A transfer between two pots of a child: its two transactions.
package struct TransferWrite: Sendable, Equatable {
    package var out: LedgerTransaction
    package var `in`: LedgerTransaction
    /// false: both were there already (a retry).
    package var created: Bool
    /// The child's balance after it (unchanged by a transfer).
    package var balanceCents: Int64

    package init(out: LedgerTransaction, in into: LedgerTransaction, created: Bool, balanceCents: Int64) {
        (self.out, self.in, self.created, self.balanceCents) = (out, into, created, balanceCents)
    }
}

/// What became of a pushed pot.
package enum PushedPot: Sendable, Equatable {
    case saved(changeTag: String)
    case unchanged(changeTag: String)
    case conflict(PotRecord)
}

/// The default pots' ids already computed, by child id: a few thousand at most (past that
/// the memory starts again), each a function of its key alone, so never stale.
private enum DefaultPotIds {
    static let limit = 4096
    static let ids = Mutex<[String: String]>([:])

    static func known(_ child: String) -> String? { ids.withLock { $0[child] } }

    static func remember(_ pot: String, of child: String) {
        ids.withLock { ids in
            if ids.count >= limit { ids.removeAll(keepingCapacity: true) }
            ids[child] = pot
        }
    }
}
