import Foundation
import LedgerModel

/// A join's first fetch goes through staging tables: each page is written with the token it
/// reached in one local transaction (so memory holds one page, and a kill resumes from the last
/// page written), then everything moves into the replica in one transaction, so the device holds
/// either its old ledger or the complete new one.
extension JoinFlow {
    /// Fetches the household's feed from where the staged pages reached to its end. The next
    /// page is requested as soon as a page arrives, so it travels while this one is written.
    func fetchIntoStage(invitationId: String, householdId: String) throws {
        let api = engine.api, retry = engine.retry, cancellation = engine.cancellation, limit = engine.joinPageSize
        let joining = LedgerPhase.joining(.fetching, invitationId: invitationId, householdId: householdId)
        let request = { @Sendable (since: String?) in
            PageRequest { () throws(APIError) in
                try retry.run(cancellation: cancellation) { () throws(APIError) in
                    try api.changes(householdId: householdId, since: since, limit: limit)
                }
            }
        }
        var next: (since: String?, request: PageRequest)?
        while true {
            try engine.checkCancelled()
            let since = try store.string(.joinStageToken)
            let current = next.flatMap { $0.since == since ? $0.request : nil } ?? request(since)
            next = nil
            let page = try current.page()
            if page.moreComing {
                guard let token = page.nextToken else { throw APIError.invalidAnswer("a feed page with more to come has no token") }
                next = (token, request(token))
            }
            let staged = try store.transaction { () throws -> Bool in
                // Another engine on this file may have staged this page or finished the join.
                guard try store.phase() == joining, try store.string(.joinStageToken) == since else { return false }
                try stage(page, householdId: householdId)
                try store.set(.joinStageToken, page.nextToken)
                return true
            }
            if try !staged && store.phase() != joining { return }
            if staged && !page.moreComing { return }
        }
    }

    /// Writes one page into the staging tables. Call inside a store transaction.
    private func stage(_ page: Wire.ChangesPage, householdId: String) throws {
        var household = try stagedHousehold()
        if let h = page.household, h.id.lowercased() == householdId { household = h }
        if let access = page.access {
            var h = household ?? Wire.Household(id: householdId, name: "")
            h.role = access.role ?? h.role
            h.permission = access.permission ?? h.permission
            household = h
        }
        if let household { try store.set(.joinStageHousehold, household.jsonText()) }
        let now = engine.now()
        for record in page.unreadable {
            try store.setAside(kind: record.kind, id: record.id.isEmpty ? "#\(record.json.hashValue)" : record.id,
                               reason: record.reason, json: record.json, now: now)
        }
        for wire in page.children {
            guard let c = wire.record() else {
                try store.setAside(kind: "child", id: wire.id.lowercased(), reason: "malformed timestamp", json: wire.jsonText(), now: now)
                continue
            }
            try store.stageChild(c)
        }
        var transactions: [TransactionRecord] = []
        transactions.reserveCapacity(page.transactions.count)
        for wire in page.transactions {
            guard let t = wire.record() else {
                try store.setAside(kind: "transaction", id: wire.id.lowercased(), reason: "malformed timestamp", json: wire.jsonText(), now: now)
                continue
            }
            transactions.append(t)
        }
        try store.stageTransactions(transactions)
        for pot in page.pots { try store.stageRecord(kind: "pot", id: pot.id.lowercased(), json: pot.jsonText()) }
        for schedule in page.schedules {
            try store.stageRecord(kind: "schedule", id: schedule.id.lowercased(), json: schedule.jsonText())
        }
        for request in page.requests { try store.stageRecord(kind: "request", id: request.id.lowercased(), json: request.jsonText()) }
    }

    private func stagedHousehold() throws -> Wire.Household? {
        try store.string(.joinStageHousehold).flatMap { try? JSONDecoderBox.decode(Wire.Household.self, $0) }
    }

    /// Moves the staged household into the replica, in one transaction: over a different
    /// ledger (wiped; it was exported first when it held anything) in bulk, or record by record
    /// through the usual merge when the replica already is this household.
    func importStage(invitationId: String, householdId: String) throws {
        let joining = LedgerPhase.joining(.fetching, invitationId: invitationId, householdId: householdId)
        var report = SyncEngine.Report()
        let events: [SyncEvent] = try store.transaction {
            guard try store.phase() == joining else { return [] }  // finished by another engine on this file
            let current = try store.household()
            let keep = current.id == householdId
            if !keep { try store.wipeLedger() }
            let wire = try stagedHousehold()
            // A feed that described only the caller's access leaves the name as it was.
            let name = wire.map(\.name).flatMap { $0.isEmpty ? nil : $0 } ?? current.name
            try store.saveHousehold(HouseholdRecord(
                id: householdId, name: name, currency: wire?.currency ?? current.currency,
                ownerAccountId: wire?.ownerAccountId, changeTag: wire?.changeTag,
                role: wire?.role.map(Role.init(rawValue:)) ?? .participant,
                permission: wire?.permission.map(Permission.init(rawValue:)) ?? .readWrite, shared: true), now: engine.now())
            var events: [SyncEvent]
            if keep {
                events = try mergeStage(householdId: householdId, report: &report)
            } else {
                events = try copyStage(report: &report)
            }
            events += try mergeStagedRecords(householdId: householdId, report: &report)
            if try store.household().permission == .readOnly { try store.setAttention(.readOnly) } else { try store.setAttention(nil) }
            try store.set(.syncToken, try store.string(.joinStageToken))
            try store.setPhase(.shared)
            try clearJoinMarks()
            try clearStage()
            try store.setLastOutcome(nil)
            try store.bumpGeneration()
            if report.pulledChildren + report.pulledTransactions > 0 {
                events.insert(.remoteChanges(children: report.pulledChildren, transactions: report.pulledTransactions), at: 0)
            }
            return events
        }
        engine.emit(events)
    }

    /// Copies the staged records into an empty replica with a few statements; transactions of
    /// a child the feed did not carry wait in `deferred` as usual.
    private func copyStage(report: inout SyncEngine.Report) throws -> [SyncEvent] {
        let copy = try store.copyStageIntoEmptyReplica()
        for t in copy.orphans {
            try store.deferTransaction(id: t.id, childId: t.childId, json: Wire.Transaction(t).jsonText())
        }
        report.pulledChildren = copy.children
        report.pulledTransactions = copy.transactions
        return []
    }

    /// Merges the staged records into a replica of the same household (a device joining again
    /// what it holds), a thousand at a time, with the usual rules (pending edits, deferred).
    private func mergeStage(householdId: String, report: inout SyncEngine.Report) throws -> [SyncEvent] {
        var events: [SyncEvent] = []
        let children = try store.stagedChildren().map(Wire.Child.init)
        events += try engine.merge(Wire.ChangesPage(children: children, transactions: [], nextToken: nil, moreComing: false),
                                   householdId: householdId, report: &report)
        var after: Int64 = 0
        while true {
            let rows = try store.stagedTransactions(after: after, limit: 1000)
            guard let last = rows.last else { break }
            after = last.position
            let page = Wire.ChangesPage(children: [], transactions: rows.map { Wire.Transaction($0.transaction) },
                                        nextToken: nil, moreComing: false)
            events += try engine.merge(page, householdId: householdId, report: &report)
        }
        return events.filter { if case .remoteChanges = $0 { return false }; return true }
    }

    /// Merges the staged pots, schedules and requests (after their children) with the usual rules.
    private func mergeStagedRecords(householdId: String, report: inout SyncEngine.Report) throws -> [SyncEvent] {
        var page = Wire.ChangesPage(children: [], transactions: [], nextToken: nil, moreComing: false)
        for (kind, json) in try store.stagedRecords() {
            switch kind {
            case "pot": if let p = try? JSONDecoderBox.decode(Wire.Pot.self, json) { page.pots.append(p) }
            case "schedule": if let s = try? JSONDecoderBox.decode(Wire.Schedule.self, json) { page.schedules.append(s) }
            case "request": if let r = try? JSONDecoderBox.decode(Wire.Request.self, json) { page.requests.append(r) }
            default: break
            }
        }
        guard !page.pots.isEmpty || !page.schedules.isEmpty || !page.requests.isEmpty else { return [] }
        return try engine.merge(page, householdId: householdId, report: &report)
            .filter { if case .remoteChanges = $0 { return false }; return true }
    }

    /// Empties the staging tables and forgets the staged token and household.
    func clearStage() throws {
        try store.clearStagedRecords()
        try store.set(.joinStageToken, nil)
        try store.set(.joinStageHousehold, nil)
    }
}

extension Wire.Child {
    /// The wire form of a replica child (for merging staged records).
    init(_ c: ChildRecord) {
        self.init(id: c.id, householdId: nil, name: c.name, sortOrder: c.sortOrder, archived: c.archived,
                  createdAt: Timestamp.format(ms: c.createdAt), modifiedAt: Timestamp.format(ms: c.modifiedAt),
                  modifiedBy: c.modifiedBy, changeTag: c.changeTag, balanceCents: nil)
    }
}

/// One feed page requested on another thread; `page()` waits for it.
final class PageRequest: Sendable {
    private let done = DispatchSemaphore(value: 0)
    private let result = Locked<Result<Wire.ChangesPage, APIError>?>(nil)

    init(_ fetch: @escaping @Sendable () throws(APIError) -> Wire.ChangesPage) {
        DispatchQueue.global().async { [done, result] in
            let outcome: Result<Wire.ChangesPage, APIError>
            do throws(APIError) { outcome = .success(try fetch()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
    }

    /// The page, once it arrived (or the call's error).
    func page() throws(APIError) -> Wire.ChangesPage {
        done.wait()
        done.signal()
        return try result.withLock { $0! }.get()
    }
}
