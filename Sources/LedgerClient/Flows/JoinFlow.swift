import Foundation
import LedgerModel

/// Joining a shared household from an invitation, and leaving it. Acceptance, the first
/// full fetch and its import are persisted steps (`LedgerPhase.JoinPhase`); the import is one
/// SQLite transaction, so a kill leaves either the old ledger or the complete new one.
struct JoinFlow {
    let engine: SyncEngine
    var store: LedgerStore { engine.store }

    init(engine: SyncEngine) { self.engine = engine }

    /// The outcome of `join`.
    struct Result: Sendable, Equatable {
        var household: HouseholdRecord
        /// Where the replaced local ledger was exported, when it was replaced.
        var exportPath: String?
    }

    /// The caller's pending invitations.
    func invitations() throws -> [Wire.Invitation] {
        try engine.prepareAllowingSwitch()
        let api = engine.api
        do { return try engine.retrying { () throws(APIError) in try api.invitations() } }
        catch { throw try engine.record(error) }
    }

    /// Accepts invitation `invitationId` and imports the household. Refused when this device
    /// holds a different ledger with any record, unless `replaceLocal`, which first exports
    /// it to `exportPath` (or a file next to the store) and reports the path.
    func join(invitationId rawId: String, replaceLocal: Bool, exportPath: String? = nil) throws -> Result {
        try engine.prepareAllowingSwitch()
        let invitationId = rawId.lowercased()
        if case .joining(let phase, let inv, let hh) = try store.phase(), inv == invitationId {
            try run(phase: phase, invitationId: inv, householdId: hh)
            return Result(household: try store.household(), exportPath: nil)
        }
        let switched = try store.attention() == .accountChanged
        if switched && !replaceLocal { throw ClientError.frozen(.accountChanged) }
        guard let invitation = try invitations().first(where: { $0.id.lowercased() == invitationId }) else {
            throw ClientError.invitationNotFound(rawId)
        }
        let householdId = invitation.householdId.lowercased()
        let written = try exportUnlessSameLedger(householdId: householdId, switched: switched, replaceLocal: replaceLocal,
                                                 exportPath: exportPath)
        try begin(.joining(.accepting, invitationId: invitationId, householdId: householdId), switched: switched)
        try run(phase: .accepting, invitationId: invitationId, householdId: householdId)
        return Result(household: try store.household(), exportPath: written)
    }

    /// Refuses to replace a different ledger with any record unless `replaceLocal`, and then
    /// exports it first (to `exportPath`, or a file next to the store); returns where.
    func exportUnlessSameLedger(householdId: String, switched: Bool, replaceLocal: Bool, exportPath: String?) throws -> String? {
        let counts = try store.counts()
        let sameLedger = try store.household().id == householdId && !switched
        guard !sameLedger && counts.children + counts.transactions > 0 else { return nil }
        guard replaceLocal else { throw ClientError.keepLocalLedger(children: counts.children, transactions: counts.transactions) }
        let path = exportPath ?? LedgerExporter.defaultPath(nextTo: store.path, now: engine.now())
        try LedgerExporter(store: store).export(to: path, now: engine.now())
        return path
    }

    /// Persists the start of a join in `phase`, remembering what to go back to; after an
    /// account switch, the user chose to move this device to the signed-in account.
    func begin(_ phase: LedgerPhase, switched: Bool) throws {
        try store.transaction {
            let previous = try store.phase()
            if case .joining = previous {} else {
                try store.set(.joinPreviousPhase, previous.storageValue)
                try store.set(.joinPreviousAccountId, switched ? try store.string(.accountId) : nil)
                try store.set(.joinPreviousAccountHandle, switched ? try store.string(.accountHandle) : nil)
            }
            if switched {
                try store.set(.accountId, try store.string(.signedInAccountId))
                try store.set(.accountHandle, try store.string(.signedInAccountHandle))
                try store.set(.signedInAccountId, nil)
                try store.set(.signedInAccountHandle, nil)
                try store.setAttention(nil)
            }
            if case .joining(.fetching, _, _) = phase {
                // Nothing to accept: what was set aside belongs to the ledger being replaced.
                try clearStage()
                try store.clearUnmerged()
            }
            try store.setPhase(phase)
            try store.bumpGeneration()
        }
    }

    /// Continues an interrupted join (called by `sync`).
    func resume(phase: LedgerPhase.JoinPhase, invitationId: String, householdId: String) throws {
        try run(phase: phase, invitationId: invitationId, householdId: householdId)
    }

    /// Runs the join from `start`; an empty `invitationId` is a household the account already
    /// belongs to (`open(householdId:replaceLocal:)`), fetched without accepting anything.
    func run(phase start: LedgerPhase.JoinPhase, invitationId: String, householdId: String) throws {
        do {
            if start == .accepting, !invitationId.isEmpty {
                try accept(invitationId: invitationId, householdId: householdId)
                try store.transaction {
                    // What was set aside belongs to the ledger being replaced; the fetch starts empty.
                    try clearStage()
                    try store.clearUnmerged()
                    try store.setPhase(.joining(.fetching, invitationId: invitationId, householdId: householdId))
                }
            }
            try store.withUnflushedCommits { try fetchIntoStage(invitationId: invitationId, householdId: householdId) }
            try engine.checkCancelled()
            try importStage(invitationId: invitationId, householdId: householdId)
        } catch let error as APIError {
            if !error.isTransient, error.status == 403 || error.status == 404 {
                // Not a member and no invitation to accept: nothing was imported, so the device
                // goes back to the ledger (and account) it had.
                try rollBack()
                throw invitationId.isEmpty ? ClientError.householdNotFound(householdId) : ClientError.invitationWithdrawn
            }
            throw try engine.record(error)
        }
    }

    /// Returns from an interrupted join to the phase and pinned account it started from.
    func rollBack() throws {
        try store.transaction {
            try store.setPhase(LedgerPhase(storageValue: try store.string(.joinPreviousPhase) ?? "localOnly"))
            if let account = try store.string(.joinPreviousAccountId) {
                try store.set(.signedInAccountId, try store.string(.accountId))
                try store.set(.signedInAccountHandle, try store.string(.accountHandle))
                try store.set(.accountId, account)
                try store.set(.accountHandle, try store.string(.joinPreviousAccountHandle))
                try store.setAttention(.accountChanged)
            }
            try clearJoinMarks()
            try clearStage()
            try store.bumpGeneration()
        }
    }

    func clearJoinMarks() throws {
        try store.set(.joinPreviousPhase, nil)
        try store.set(.joinPreviousAccountId, nil)
        try store.set(.joinPreviousAccountHandle, nil)
    }

    private func accept(invitationId: String, householdId: String) throws(APIError) {
        let api = engine.api
        do {
            _ = try engine.retrying { () throws(APIError) in try api.accept(invitationId: invitationId) }
        } catch {
            // Accepted before a lost answer or a kill: membership shows in the household.
            guard error.status == 404 || error.status == 409 else { throw error }
            _ = try engine.retrying { () throws(APIError) in try api.household(id: householdId) }
        }
    }

    /// Leaves the household (participants only). The local copy is kept as a local-only ledger.
    func leave() throws {
        try engine.prepareAllowingSwitch()
        guard try store.phase() == .shared else { throw ClientError.notShared }
        let household = try store.household()
        guard let account = try store.string(.accountId) else { throw ClientError.notSignedIn }
        if household.role == .owner || household.ownerAccountId == account {
            // An owner cannot leave a household that still exists; once it is gone, keep the copy.
            if try store.attention() == .householdDeleted { return try detach() }
            throw ClientError.ownerCannotLeave
        }
        let api = engine.api
        do {
            try engine.retrying { () throws(APIError) in try api.removeParticipant(householdId: household.id, accountId: account) }
        } catch {
            // Already revoked or gone: leaving locally is all that is left.
            if error.status != 403 && error.status != 404 { throw try engine.record(error) }
        }
        try detach()
    }

    /// Turns the replica into a local-only ledger under a new household id, keeping every record.
    func detach() throws {
        try store.transaction {
            // The ids stay the old household's on the server; fresh ones let this copy be
            // shared later as a household of its own.
            try store.rekeyLedger(requeue: false)
            var h = try store.household()
            h.role = nil; h.permission = nil; h.shared = false
            try store.saveHousehold(h, now: engine.now())
            try store.set(.syncToken, nil)
            try store.setAttention(nil)
            try store.setPhase(.localOnly)
            try store.bumpGeneration()
        }
    }
}

extension SyncEngine {
    /// Like `prepare`, but lets the user act (join with replacement, leave) after an account switch.
    func prepareAllowingSwitch() throws {
        guard let token = try api.token ?? store.string(.token) else { throw ClientError.notSignedIn }
        api.token = token
        api.cancellation = cancellation
    }
}
