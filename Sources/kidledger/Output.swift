import Foundation
import LedgerClient
import LedgerModel

/// JSON shapes the CLI prints with `--json`.
enum Output {
    static func ms(_ date: Date) -> String {
        Timestamp.format(ms: Int64((date.timeIntervalSince1970 * 1000).rounded()))
    }

    static func child(_ c: LedgerClient.Child, balance: Int64) -> JSONValue {
        .object(["id": .string(c.id), "name": .string(c.name), "sortOrder": .int(c.sortOrder),
                 "archived": .bool(c.archived), "balanceCents": .int(balance),
                 "createdAt": .string(ms(c.createdAt)), "modifiedAt": .string(ms(c.modifiedAt))])
    }

    static func childSummary(_ c: ChildSummary) -> JSONValue {
        .object(["id": .string(c.id), "name": .string(c.name), "archived": .bool(c.archived),
                 "balanceCents": .int(c.balanceCents)])
    }

    static func transaction(_ t: LedgerClient.LedgerTransaction) -> JSONValue {
        .object(["id": .string(t.id), "childId": .string(t.childId), "amountCents": .int(t.amountCents),
                 "note": .string(t.note), "source": .string(t.source.rawValue),
                 "createdAt": .string(ms(t.createdAt)),
                 "reversesId": t.reversesId.map { .string($0) } ?? .null,
                 "reversedById": t.reversedBy.map { .string($0) } ?? .null])
    }

    /// A schedule in the API's shape (with `isPending`).
    static func schedule(_ s: Schedule) -> JSONValue {
        .object(["id": .string(s.id), "childId": .string(s.childId), "kind": .string(s.kind.rawValue),
                 "amountCents": s.amountCents.map { .int($0) } ?? .null,
                 "rateBasisPoints": s.rateBasisPoints.map { .int(Int64($0)) } ?? .null,
                 "cadence": .string(s.cadence.rawValue), "firstDate": .string(s.firstDate.description),
                 "timeZone": .string(s.timeZone), "endDate": s.endDate.map { .string($0.description) } ?? .null,
                 "note": .string(s.note), "paused": .bool(s.paused),
                 "nextDueDate": s.nextDueDate.map { .string($0.description) } ?? .null, "isPending": .bool(s.isPending)])
    }

    /// A pot with its balance and goal.
    static func pot(_ p: PotSummary) -> JSONValue {
        .object(["id": .string(p.id), "childId": .string(p.childId), "name": .string(p.name), "isDefault": .bool(p.isDefault),
                 "archived": .bool(p.archived), "balanceCents": .int(p.balanceCents),
                 "targetCents": p.targetCents.map { .int($0) } ?? .null,
                 "targetDate": p.targetDate.map { .string($0.description) } ?? .null,
                 "progress": p.progress.map { .number(String($0)) } ?? .null])
    }

    /// The `state` word of `status --json`: synced, changesPending, offline, accountUnavailable,
    /// attentionRequired, reconciling (a local-only ledger is synced: it has nothing to upload).
    static func state(_ s: SyncStatus) -> String {
        switch s {
        case .synced, .syncing, .localOnly: return "synced"
        case .pending: return "changesPending"
        case .offline: return "offline"
        case .accountUnavailable: return "accountUnavailable"
        case .attentionRequired: return "attentionRequired"
        case .reconciling: return "reconciling"
        }
    }

    static func status(_ s: SyncStatus) -> JSONValue {
        var reason: JSONValue = .null
        if case .attentionRequired(let r, _) = s { reason = .string(r.rawValue) }
        var object: JSONObject = ["state": .string(state(s)), "pending": .int(Int64(s.pendingCount)), "reason": reason]
        if case .reconciling(_, let waiting) = s { object["waiting"] = .int(Int64(waiting)) }
        return .object(object)
    }

    static func participant(_ p: Participant) -> JSONValue {
        .object(["accountId": .string(p.accountId), "handle": p.handle.map { .string($0) } ?? .null,
                 "displayName": p.displayName.map { .string($0) } ?? .null, "permission": .string(p.permission.rawValue),
                 "status": .string(p.status.rawValue)])
    }

    static func household(_ h: HouseholdInfo?) -> JSONValue {
        guard let h else { return .null }
        return .object(["id": .string(h.id), "name": .string(h.name), "currency": .string(h.currency),
                        "role": h.role.map { .string($0.rawValue) } ?? .null,
                        "permission": h.permission.map { .string($0.rawValue) } ?? .null,
                        "shared": .bool(h.shared)])
    }

    static func householdSummary(_ h: HouseholdSummary, onThisDevice: Bool) -> JSONValue {
        .object(["id": .string(h.id), "name": .string(h.name), "currency": .string(h.currency),
                 "role": .string(h.role.rawValue), "permission": .string(h.permission.rawValue),
                 "shared": .bool(h.shared), "onThisDevice": .bool(onThisDevice)])
    }

    /// The status in words, with when it was last known.
    static func describe(_ s: SyncStatus) -> String {
        switch s {
        case .synced(let at): return "synced" + (at.timeIntervalSince1970 > 0 ? " (last sync \(ms(at)))" : "")
        case .syncing: return "syncing"
        case .localOnly: return "synced (local only)"
        case .pending(let n): return n > 0 ? "changes pending (\(n))" : "changes pending"
        case .offline(let n, let since):
            return "offline since \(ms(since))" + (n > 0 ? " (\(count(n, "change", "changes")) pending)" : "")
        case .accountUnavailable(let n): return "account unavailable" + (n > 0 ? " (\(count(n, "change", "changes")) pending)" : "")
        case .attentionRequired(let r, let n):
            return "attention required: \(Wording.lowered(r.explanation))" + (n > 0 ? " (\(count(n, "change", "changes")) pending)" : "")
        case .reconciling(let n, let waiting):
            var words = "reconciling: the server went back in time"
            if n > 0 { words += "; \(count(n, "record", "records")) of this device to upload again" }
            if waiting > 0 { words += "; \(count(waiting, "record", "records")) waiting for another member's device" }
            return words
        }
    }

    /// `1 child`, `2 children`.
    static func count(_ n: Int, _ one: String, _ many: String) -> String { "\(n) \(n == 1 ? one : many)" }
}
