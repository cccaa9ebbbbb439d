import LedgerModel

/// Opening on this device a household the signed-in account already owns or has joined — a
/// second device, a replaced phone, a recovered or linked one. It is a join without an
/// invitation: the same guard against replacing a different ledger, the same staged, resumable
/// first fetch (`LedgerPhase.joining` with an empty invitation id), the same import in one
/// transaction; afterwards the device syncs like any other.
extension JoinFlow {
    /// The households the signed-in account owns or takes part in.
    func households() throws -> [Wire.Household] {
        try engine.prepareAllowingSwitch()
        let api = engine.api
        do { return try engine.retrying { () throws(APIError) in try api.households() } }
        catch { throw try engine.record(error) }
    }

    /// Opens household `householdId` here. Refused when this device holds a different ledger
    /// with any record, unless `replaceLocal`, which first exports it to `exportPath` (or a
    /// file next to the store) and reports the path. Opening the household the device already
    /// syncs does nothing; calling it again after an interruption continues the fetch.
    func open(householdId rawId: String, replaceLocal: Bool, exportPath: String? = nil) throws -> Result {
        try engine.prepareAllowingSwitch()
        let householdId = rawId.lowercased()
        if case .joining(let phase, let invitation, let hh) = try store.phase(), hh == householdId {
            try run(phase: phase, invitationId: invitation, householdId: hh)
            return Result(household: try store.household(), exportPath: nil)
        }
        let switched = try store.attention() == .accountChanged
        if switched && !replaceLocal { throw ClientError.frozen(.accountChanged) }
        let current = try store.household()
        if !switched, current.id == householdId, try store.phase() == .shared, try store.attention() == nil {
            return Result(household: current, exportPath: nil)
        }
        // A household the account cannot read is refused before anything is exported or staged.
        let api = engine.api
        do {
            _ = try engine.retrying { () throws(APIError) in try api.household(id: householdId) }
        } catch {
            if !error.isTransient, error.status == 403 || error.status == 404 { throw ClientError.householdNotFound(householdId) }
            throw try engine.record(error)
        }
        let written = try exportUnlessSameLedger(householdId: householdId, switched: switched, replaceLocal: replaceLocal,
                                                 exportPath: exportPath)
        try begin(.joining(.fetching, invitationId: "", householdId: householdId), switched: switched)
        try run(phase: .fetching, invitationId: "", householdId: householdId)
        return Result(household: try store.household(), exportPath: written)
    }
}
