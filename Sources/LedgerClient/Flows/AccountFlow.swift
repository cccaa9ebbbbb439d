import LedgerModel

/// What the signed-in account does to itself on the server, and what that means for the
/// ledger on this device: handing the household to another parent, deleting the account.
struct AccountFlow {
    let engine: SyncEngine
    var store: LedgerStore { engine.store }

    init(engine: SyncEngine) { self.engine = engine }

    /// Hands the shared household to `accountId` (an accepted read-write participant); this
    /// device stays in it as a read-write participant. Returns the household as now stored.
    func transferOwnership(to rawAccountId: String) throws -> HouseholdRecord {
        try engine.prepare()
        guard try store.phase() == .shared else { throw ClientError.notShared }
        let household = try store.household()
        if let role = household.role, role != .owner { throw ClientError.ownerOnly }
        let accountId = rawAccountId.lowercased()
        let api = engine.api
        var newOwner = accountId
        var changeTag: String?
        do {
            let answer = try engine.retrying { () throws(APIError) in
                try api.transferOwnership(householdId: household.id, accountId: accountId)
            }
            newOwner = (answer.ownerId ?? answer.ownerAccountId ?? accountId).lowercased()
            changeTag = answer.changeTag
        } catch {
            // A retry after a lost answer is no longer the owner's call: the household says.
            guard error.status == 403, error.code == "owner_only",
                  let now = try? engine.retrying({ () throws(APIError) in try api.household(id: household.id) }),
                  now.ownerAccountId?.lowercased() == accountId else { throw try engine.record(error) }
            changeTag = now.changeTag
        }
        return try store.transaction {
            var h = try store.household()
            guard h.id == household.id else { return h }
            h.role = .participant
            h.permission = .readWrite
            h.ownerAccountId = newOwner
            h.changeTag = changeTag ?? h.changeTag
            try store.saveHousehold(h, now: engine.now())
            return h
        }
    }

    /// Deletes the signed-in account on the server (`DELETE /v1/me`), then forgets it here. The
    /// ledger's records stay: a ledger of the deleted account becomes a local-only ledger under
    /// fresh ids; a ledger of another account (this device had switched) goes back to that
    /// account's token id. Returns true in that second case.
    func deleteAccount(confirmHandle: String, deletingSharedHouseholds: Bool) throws -> Bool {
        try engine.prepareAllowingSwitch()
        let api = engine.api
        var attempts = 0
        do {
            try engine.retrying { () throws(APIError) in
                attempts += 1
                try api.deleteAccount(confirmHandle: confirmHandle, deletingSharedHouseholds: deletingSharedHouseholds)
            }
        } catch {
            // The first try was applied but its answer lost: the token no longer exists.
            if !(attempts > 1 && error.status == 401) { throw try engine.record(error) }
        }
        return try store.transaction {
            // A join under way never imported anything: the replica is still the ledger it had.
            if case .joining = try store.phase() { try JoinFlow(engine: engine).rollBack() }
            let switched = try store.string(.signedInAccountId) != nil
            if switched {
                try store.set(.tokenId, try store.string(.pinnedTokenId))
                try store.set(.signedInAccountId, nil)
                try store.set(.signedInAccountHandle, nil)
                try store.set(.signedInAccountDisplayName, nil)
                if try store.attention() == .accountChanged { try store.setAttention(nil) }
            } else {
                if try store.phase() != .localOnly { try JoinFlow(engine: engine).detach() }
                for key: MetaKey in [.tokenId, .accountId, .accountHandle, .accountDisplayName,
                                     .entitlementToken, .entitlementKeys] {
                    try store.set(key, nil)
                }
            }
            try store.set(.pinnedTokenId, nil)
            try JoinFlow(engine: engine).clearJoinMarks()
            try store.setLastOutcome(nil)
            return switched
        }
    }
}
