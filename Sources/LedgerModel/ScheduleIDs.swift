import Foundation

/// The deterministic ids of money that moves by itself: UUIDv5 in `LedgerIDs.namespace` of
/// a name made of what caused it (ids inside names in lowercase), so every payer — the
/// server, each device offline — writes the same row once.
public enum ScheduleIDs {
    /// The payment of `scheduleId` for its local due date `date`:
    /// UUIDv5(N, kind + ":" + scheduleId + ":" + date), e.g. the name
    /// `allowance:5d0c4a8e-…:2026-12-04`. The date is the local date only: the id does not
    /// depend on the time zone or on the tz database.
    public static func payment(kind: ScheduleKind, scheduleId: UUID, date: LocalDate, sha1: SHA1.Function = .portable) -> UUID {
        let kindName = kind.rawValue, dateName = date.description
        return UUIDv5.make(namespace: LedgerIDs.namespace, nameMaxCount: kindName.utf8.count + 1 + 36 + 1 + dateName.utf8.count,
                           sha1: sha1) { w in
            w.put(utf8: kindName)
            w.put(UInt8(ascii: ":"))
            w.putLowercased(scheduleId)
            w.put(UInt8(ascii: ":"))
            w.put(utf8: dateName)
        }
    }

    /// The default pot of `childId`, which every child has: UUIDv5(N, "pot:" + childId).
    public static func defaultPot(childId: UUID, sha1: SHA1.Function = .portable) -> UUID {
        prefixed("pot:", childId, sha1: sha1)
    }

    /// The transaction taking the money of transfer `id` out of its pot:
    /// UUIDv5(N, "transfer-out:" + id).
    public static func transferOut(id: UUID, sha1: SHA1.Function = .portable) -> UUID {
        prefixed("transfer-out:", id, sha1: sha1)
    }

    /// The transaction putting the money of transfer `id` into its pot:
    /// UUIDv5(N, "transfer-in:" + id).
    public static func transferIn(id: UUID, sha1: SHA1.Function = .portable) -> UUID {
        prefixed("transfer-in:", id, sha1: sha1)
    }

    private static func prefixed(_ prefix: StaticString, _ id: UUID, sha1: SHA1.Function) -> UUID {
        UUIDv5.make(namespace: LedgerIDs.namespace, nameMaxCount: prefix.utf8CodeUnitCount + 36, sha1: sha1) { w in
            w.put(literal: prefix)
            w.putLowercased(id)
        }
    }
}
