import Foundation
import LedgerModel

/// Enabling sharing on an existing local ledger, and managing the share afterwards.
/// Each migration step is persisted (`LedgerPhase.SharePhase`), so a crash or kill at any
/// point resumes without duplicates or a second household.
struct ShareFlow {
    let engine: SyncEngine
    var store: LedgerStore { engine.store }

    init(engine: SyncEngine) { self.engine = engine }

    /// What enabling sharing will upload.
    struct Preview: Sendable, Equatable {
        var householdName: String
        var children: Int
        var transactions: Int
    }

    /// The counts `share enable` shows before asking for confirmation.
    func preview(name: String? = nil) throws -> Preview {
        let counts = try store.counts()
        return Preview(householdName: try name.map(LedgerService.validName) ?? store.household().name,
                       children: counts.children, transactions: counts.transactions)
    }

    /// Stages every local record and runs the migration to the end (or resumes it), then syncs
    /// once (best effort: the ledger is shared even if that last pull fails).
    func enable(name: String? = nil) throws {
        try engine.prepare()
        switch try store.phase() {
        case .shared: throw ClientError.alreadyShared
        case .joining: throw ClientError.joinInProgress
        case .sharing: break
        case .localOnly: try stage(name: name)
        }
        var report = SyncEngine.Report()
        do { try resume(into: &report) } catch let error as APIError { throw try engine.record(error) }
        try store.setLastOutcome(nil)
        _ = try? engine.sync()
    }

    /// Queues every local record with its deterministic id, in one transaction.
    func stage(name: String?) throws {
        let clean = try name.map(LedgerService.validName)
        guard let account = try store.string(.accountId) else { throw ClientError.notSignedIn }
        try store.transaction {
            guard try store.phase() == .localOnly else { return }
            var household = try store.household()
            if let clean { household.name = clean }
            try store.saveHousehold(household, now: engine.now())
            // The upload creates every child in this account's name (the server takes a
            // child's `modifiedBy` only from its caller), a kept copy of another household too.
            try store.attributeEveryChild(to: account)
            // Decisions too: the server takes a decision's `decidedBy` only from its caller.
            try store.attributeEveryRequest(to: account)
            try store.enqueueEverything()
            try store.set(.syncToken, nil)
            try store.setPhase(.sharing(.staged))
            try store.bumpGeneration()
        }
    }

    /// Runs the remaining migration steps from the persisted phase.
    func resume(into report: inout SyncEngine.Report) throws {
        var rekeyed = false
        while case .sharing(let phase) = try store.phase() {
            try engine.checkCancelled()
            switch phase {
            case .staged:
                let household = try store.household()
                guard let answer = try createHousehold(household) else {
                    // The id is another account's household (a ledger kept after leaving it, or an
                    // import of someone else's export): nothing was uploaded yet, so give the
                    // ledger fresh ids and create a household of its own.
                    guard !rekeyed else { throw APIError.problem(status: 409, code: "id_conflict", detail: nil, retryAfterSeconds: nil) }
                    rekeyed = true
                    try store.transaction {
                        try store.rekeyLedger(requeue: true)
                        try store.set(.syncToken, nil)
                        try store.bumpGeneration()
                    }
                    continue
                }
                try store.transaction {
                    var h = household
                    h.ownerAccountId = answer.body.ownerAccountId
                    h.changeTag = answer.body.changeTag
                    h.role = answer.body.role.map(Role.init(rawValue:)) ?? .owner
                    h.permission = answer.body.permission.map(Permission.init(rawValue:)) ?? .readWrite
                    try store.saveHousehold(h, now: engine.now())
                    try store.setPhase(.sharing(.householdCreated))
                }
            case .householdCreated:
                // Uploaded only when the queue drained: a push that stopped early (frozen, or
                // the server kept answering without taking records) leaves the step to resume.
                guard try engine.push(into: &report) else { throw UploadIncomplete(pending: try store.pendingCount()) }
                try engine.checkCancelled()
                try store.transaction {
                    if try store.phase() == .sharing(.householdCreated) { try store.setPhase(.sharing(.uploaded)) }
                }
            case .uploaded:
                let household = try store.household()
                let api = engine.api
                _ = try engine.retrying { () throws(APIError) in try api.createShare(householdId: household.id) }
                try store.transaction {
                    var h = household
                    h.shared = true
                    try store.saveHousehold(h, now: engine.now())
                    try store.setPhase(.shared)
                }
            }
        }
    }

    /// `PUT /v1/households/{id}` with the device's id; nil when the id is another account's.
    private func createHousehold(_ household: HouseholdRecord) throws(APIError) -> APIClient.Answer<Wire.Household>? {
        let api = engine.api
        do {
            return try engine.retrying { () throws(APIError) in
                try api.putHousehold(id: household.id, name: household.name, currency: household.currency)
            }
        } catch {
            if error.status == 409 && error.code == "id_conflict" { return nil }
            throw error
        }
    }

    // MARK: Managing the share

    private func ownedHousehold() throws -> HouseholdRecord {
        guard try store.phase() == .shared else { throw ClientError.notShared }
        let household = try store.household()
        if let role = household.role, role != .owner { throw ClientError.ownerOnly }
        return household
    }

    /// Invites an account by handle; `readOnly` limits it to reading.
    func invite(handle: String, readOnly: Bool) throws -> Wire.Participant {
        try engine.prepare()
        let household = try ownedHousehold()
        do {
            let api = engine.api
            _ = try engine.retrying { () throws(APIError) in try api.createShare(householdId: household.id) }
            return try engine.retrying { () throws(APIError) in
                try api.invite(householdId: household.id, handle: handle, permission: readOnly ? .readOnly : .readWrite)
            }
        } catch { throw try engine.record(error) }
    }

    /// The share's participants.
    func participants() throws -> [Wire.Participant] {
        try engine.prepare()
        guard try store.phase() == .shared else { throw ClientError.notShared }
        let id = try store.household().id
        let api = engine.api
        do { return try engine.retrying { () throws(APIError) in try api.share(householdId: id) }.participants }
        catch { throw try engine.record(error) }
    }

    /// Revokes the participant with `handle`.
    func revoke(handle: String) throws -> Wire.Participant {
        let household = try ownedHousehold()
        let all = try participants()
        guard let p = all.first(where: { $0.handle?.lowercased() == handle.lowercased() }) else {
            throw ClientError.invalid(field: "handle", message: "'\(handle)' is not a participant")
        }
        let api = engine.api
        do { try engine.retrying { () throws(APIError) in try api.removeParticipant(householdId: household.id, accountId: p.accountId) } }
        catch { throw try engine.record(error) }
        var revoked = p
        revoked.status = "revoked"
        return revoked
    }

    /// Stops sharing: every participant loses access; this device keeps syncing as owner.
    func stop() throws {
        try engine.prepare()
        let household = try ownedHousehold()
        let api = engine.api
        do { try engine.retrying { () throws(APIError) in try api.deleteShare(householdId: household.id) } }
        catch { if error.status != 404 { throw try engine.record(error) } }
        var h = household
        h.shared = false
        try store.saveHousehold(h, now: engine.now())
    }
}
