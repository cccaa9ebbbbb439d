import Foundation
import LedgerModel

extension Ledger {
    /// The household, every child with its balance, and the sync status, read in one go.
    /// Allowance that fell due is paid first.
    public func snapshot() async throws -> LedgerSnapshot {
        // The read says when its allowances fall due (it reads them for the next payments):
        // only when one is due now, on a device that pays, is it paid and the ledger read
        // again (again even when another ledger on the file paid it first).
        let read = try publicErrors { try readSnapshotAndDue() }
        guard let due = read.dueAtMs, due <= service.now(), service.paysAllowance else { return read.snapshot }
        await payDueAllowances()
        return try publicErrors { try readSnapshot() }
    }

    func readSnapshot() throws -> LedgerSnapshot {
        try readSnapshotAndDue().snapshot
    }

    /// The snapshot, and the earliest instant at which an allowance it read falls due (nil:
    /// none will). A fixed number of statements however many children: the household, the
    /// status's values and counts and which kinds the replica holds in one, then one per kind
    /// for every child, none for a kind the replica holds none of.
    func readSnapshotAndDue() throws -> (snapshot: LedgerSnapshot, dueAtMs: Int64?) {
        try store.readConsistently {
            try store.withSnapshotHead { head in
                let paired = try service.pairedChild()
                let pots = head.pots ? try store.potsByChild() : [:]
                let money = head.potMoney ? try store.potMoneyByChild() : [:]
                var next: [String: NextPayment] = [:]
                var dueAt: Int64?
                for schedule in head.allowances ? try store.allowanceSchedules() : [] {
                    guard let state = schedule.state, let date = state.nextPayableDate else { continue }
                    let at = state.terms.dueInstantMs(date)
                    dueAt = min(dueAt ?? at, at)
                    guard let amount = schedule.amountCents else { continue }
                    Self.add(NextPayment(date: date, cents: amount), to: &next[schedule.childId])
                }
                var children: [ChildSummary] = []
                for c in try store.childSummaries(queued: head.pending > 0) where paired == nil || c.child.id == paired {
                    let mainPot = defaultPotId(of: c.child.id)
                    let balances = LedgerStore.potBalances(defaultPot: mainPot, balance: c.balanceCents, money: money[c.child.id] ?? [:])
                    children.append(ChildSummary(
                        id: c.child.id, name: c.child.name, archived: c.child.archived, sortOrder: c.child.sortOrder,
                        balanceCents: c.balanceCents, pendingCount: c.pendingCount,
                        pots: Self.potSummaries(of: c.child, defaultPot: mainPot, pots: pots[c.child.id] ?? [], balances: balances),
                        nextPayment: next[c.child.id]))
                }
                let snapshot = LedgerSnapshot(household: HouseholdInfo(head.household), children: children,
                                              status: try readStatus(), rejected: head.rejected ? try readRejected() : [],
                                              pendingRequests: head.pendingRequests, mode: paired.map { .child($0) } ?? .parent)
                return (snapshot, dueAt)
            }
        }
    }

    /// A child's transactions, newest first, `limit` at a time; pass the previous page's
    /// `nextCursor` as `before` for the next one.
    public func history(of childId: String, limit: Int = 50, before: String? = nil) async throws -> HistoryPage {
        let limit = max(1, min(limit, 1000))
        return try publicErrors {
            try checkChildReadable(childId)
            guard try store.child(id: childId.lowercased()) != nil else { throw LedgerError.notFound }
            var older: (createdAt: Int64, position: Int64)?
            if let before {
                let parts = before.split(separator: ":").compactMap { Int64($0) }
                guard parts.count == 2 else {
                    throw LedgerError.invalidInput(field: "cursor", message: "is not one this ledger handed out")
                }
                older = (parts[0], parts[1])
            }
            let rows = try store.history(childId: childId.lowercased(), limit: limit + 1, before: older)
            let items = rows.prefix(limit).map {
                LedgerTransaction($0.transaction, reversedBy: $0.reversedById, isPending: $0.isPending)
            }
            let next = rows.count > limit ? "\(rows[limit - 1].transaction.createdAt):\(rows[limit - 1].position)" : nil
            return HistoryPage(items: Array(items), nextCursor: next)
        }
    }

    /// Local changes the server refused, oldest first; they stay until dismissed.
    public func rejectedChanges() async throws -> [RejectedChange] {
        try publicErrors { try readRejected() }
    }

    /// Forgets a refused change the user has seen.
    public func dismissRejected(_ change: RejectedChange) async throws {
        try publicErrors { _ = try store.dismissRejected(RecordKind(rawValue: change.kind.rawValue) ?? .transaction, id: change.id) }
        await publish()
    }

    func readRejected() throws -> [RejectedChange] {
        try store.rejectedChanges().map(RejectedChange.init)
    }

    /// The status as a user sees it.
    public func status() async -> SyncStatus {
        (try? readStatus()) ?? .pending(count: 0)
    }

    /// The persisted status (`LedgerService.status`), with what only this layer knows: a
    /// ledger never shared, a sync running here, since when the server was unreachable, when
    /// the last sync succeeded, and records set aside as unreadable.
    func readStatus() throws -> SyncStatus {
        let state = try service.status(signedIn: !signedOut)
        if case .attentionRequired(let reason, let pending) = state { return .attentionRequired(reason, pending: pending) }
        if try store.unmergedCount() > 0 { return .attentionRequired(.unreadableChanges, pending: state.pending) }
        let phase = try store.phase()
        if phase == .localOnly { return .localOnly }
        let reconciling = try phase == .shared && store.reconcileNeeded()
        switch state {
        case .accountUnavailable(let pending): return .accountUnavailable(pending: pending)
        case .changesPending where reconciling, .synced where reconciling:
            // Never "synced" while the server lacks what this device holds.
            return .reconciling(pending: try store.pendingCount(), waiting: try store.reconcileWaiting())
        case _ where syncing > 0: return .syncing
        case .offline(let pending):
            let since = meta(.offlineSince).flatMap(Int64.init).map(Date.init(ms:)) ?? Date()
            return .offline(pending: pending, since: since)
        case .changesPending(let pending): return .pending(count: pending)
        case .synced, .attentionRequired:
            guard phase == .shared else { return .pending(count: 0) }
            let at = try store.string(.lastSyncAt).flatMap(Int64.init).map(Date.init(ms:)) ?? Date(timeIntervalSince1970: 0)
            return .synced(at: at)
        }
    }
}

extension RejectedChange {
    init(_ r: RejectedRecord) {
        self.init(kind: Kind(rawValue: r.kind.rawValue) ?? .transaction, id: r.id, childId: nil, name: nil, amountCents: nil,
                  note: nil, code: r.code, detail: r.detail, rejectedAt: Date(ms: r.rejectedAt))
        let json = (try? JSONValue.parse(r.json)) ?? .null
        switch kind {
        case .child:
            childId = r.id
            name = json["name"]?.stringValue
        case .transaction, .schedule:
            childId = json["childId"]?.stringValue?.lowercased()
            amountCents = json["amountCents"]?.intValue
            note = json["note"]?.stringValue
        case .pot:
            childId = json["childId"]?.stringValue?.lowercased()
            name = json["name"]?.stringValue
        case .request:
            childId = json["childId"]?.stringValue?.lowercased()
            amountCents = json["amountCents"]?.intValue
            note = json["note"]?.stringValue
        }
    }
}

extension Date {
    init(ms: Int64) { self.init(timeIntervalSince1970: Double(ms) / 1000) }
    var ms: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }
}

extension HouseholdInfo {
    init(_ h: HouseholdRecord) {
        self.init(id: h.id, name: h.name, currency: h.currency, role: h.role, permission: h.permission, shared: h.shared)
    }
}

extension Child {
    init(_ c: ChildRecord) {
        self.init(id: c.id, name: c.name, archived: c.archived, sortOrder: c.sortOrder,
                  createdAt: Date(ms: c.createdAt), modifiedAt: Date(ms: c.modifiedAt))
    }
}

extension LedgerTransaction {
    init(_ t: TransactionRecord, reversedBy: String? = nil, isPending: Bool) {
        self.init(id: t.id, childId: t.childId, amountCents: t.amountCents, note: t.note,
                  source: TransactionSource(rawValue: t.source) ?? .api, createdAt: Date(ms: t.createdAt),
                  recordedAt: t.recordedAt.map(Date.init(ms:)), authorAccountId: t.authorAccountId,
                  reversesId: t.reversesId, reversedBy: reversedBy, isPending: isPending,
                  potId: t.potId ?? LedgerService.defaultPot(of: t.childId))
    }
}
