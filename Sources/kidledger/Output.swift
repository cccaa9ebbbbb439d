import LedgerClient
import LedgerModel

/// JSON shapes the CLI prints with `--json`.
enum Output {
    static func child(_ c: ChildRecord, balance: Int64) -> JSONValue {
        .object(["id": .string(c.id), "name": .string(c.name), "sortOrder": .int(c.sortOrder),
                 "archived": .bool(c.archived), "balanceCents": .int(balance),
                 "createdAt": .string(Timestamp.format(ms: c.createdAt)),
                 "modifiedAt": .string(Timestamp.format(ms: c.modifiedAt)), "modifiedBy": .string(c.modifiedBy)])
    }

    static func childSummary(_ c: ChildBalance) -> JSONValue {
        .object(["id": .string(c.child.id), "name": .string(c.child.name), "archived": .bool(c.child.archived),
                 "balanceCents": .int(c.balanceCents)])
    }

    static func transaction(_ t: TransactionRecord, reversedById: String? = nil) -> JSONValue {
        .object(["id": .string(t.id), "childId": .string(t.childId), "amountCents": .int(t.amountCents),
                 "note": .string(t.note), "source": .string(t.source),
                 "createdAt": .string(Timestamp.format(ms: t.createdAt)),
                 "reversesId": t.reversesId.map { .string($0) } ?? .null,
                 "reversedById": reversedById.map { .string($0) } ?? .null])
    }

    static func status(_ s: SyncState) -> JSONValue {
        .object(["state": .string(s.state), "pending": .int(Int64(s.pending)),
                 "reason": s.reason.map { .string($0.rawValue) } ?? .null])
    }

    static func participant(_ p: Wire.Participant) -> JSONValue {
        .object(["accountId": .string(p.accountId), "handle": p.handle.map { .string($0) } ?? .null,
                 "displayName": p.displayName.map { .string($0) } ?? .null, "permission": .string(p.permission),
                 "status": .string(p.status)])
    }

    static func household(_ h: HouseholdRecord) -> JSONValue {
        .object(["id": .string(h.id), "name": .string(h.name), "currency": .string(h.currency),
                 "role": h.role.map { .string($0) } ?? .null, "permission": h.permission.map { .string($0) } ?? .null,
                 "shared": .bool(h.shared)])
    }

    static func describe(_ s: SyncState) -> String {
        switch s {
        case .synced: return "synced"
        case .changesPending(let n): return n > 0 ? "changes pending (\(n))" : "changes pending"
        case .offline(let n): return "offline" + (n > 0 ? " (\(count(n, "change", "changes")) pending)" : "")
        case .accountUnavailable(let n): return "account unavailable" + (n > 0 ? " (\(count(n, "change", "changes")) pending)" : "")
        case .attentionRequired(let r, let n):
            return "attention required: \(r.explanation)" + (n > 0 ? " (\(count(n, "change", "changes")) pending)" : "")
        }
    }

    /// `1 child`, `2 children`.
    static func count(_ n: Int, _ one: String, _ many: String) -> String { "\(n) \(n == 1 ? one : many)" }
}
