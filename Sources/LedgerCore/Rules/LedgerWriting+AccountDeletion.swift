import LedgerModel

extension LedgerWriting {
    /// `DELETE /v1/me`: ends the account, in one transaction. Confirmed by its handle
    /// (`confirmationMismatch`). Households it owns alone are deleted; households it owns
    /// that have other members refuse the deletion (`ownerOfSharedHousehold`, listing them)
    /// unless `ownedShared` is `.delete`, which deletes them too (their members' feeds then
    /// answer 404, and their devices keep what they hold). It leaves every household it
    /// joined (`left`, which its feed shows) and its pending invitations go. Every token is
    /// revoked; its recovery codes, link codes and blocks are forgotten; its handle is
    /// refused to new accounts for 30 days; its identities are unlinked and its Apple tokens
    /// queued for revocation. The account's row stays, as "Deleted account",
    /// so what it wrote in other households keeps its `modifiedBy` and `authorAccountId`.
    package func deleteAccount(_ id: String, confirmHandle: String, ownedShared: OwnedSharedHouseholds, now: Int64) throws -> AccountDeletion {
        try lockAccounts([id])
        guard let account = try account(id: id), !AccountRecord.isDeletedHandle(account.handle) else {
            throw LedgerStorageError.callerUnknown
        }
        guard confirmHandle == account.handle else { throw AccountAccessError.confirmationMismatch }
        let owned = try ownedHouseholds(account: id)
        let shared = owned.filter(\.hasOtherMembers).map(\.id).sorted()
        if !shared.isEmpty, ownedShared == .refuse { throw AccountAccessError.ownerOfSharedHousehold(shared) }

        var deletion = AccountDeletion(revokedTokens: [], deletedHouseholds: [], leftHouseholds: [])
        // Households in id order, whichever the account's part in them (the order every
        // write that takes several households takes them in).
        let joined = try activeParticipations(account: id)
        var steps: [(household: String, owned: Bool, status: Participant.Status?)] = owned.map { ($0.id, true, nil) }
        steps += joined.map { ($0.household, false, $0.status) }
        for step in steps.sorted(by: { $0.household < $1.household }) {
            if step.owned {
                try deleteHousehold(id: step.household)
                deletion.deletedHouseholds.append(step.household)
            } else if step.status == .accepted {
                try updateParticipant(household: step.household, account: id, status: .left, permission: nil,
                                      newInvitation: nil, at: now)
                _ = try nextSeq(household: step.household)
                deletion.leftHouseholds.append(step.household)
            } else {
                // A pending invitation was never a membership: it goes.
                try deleteParticipant(household: step.household, account: id)
                _ = try nextSeq(household: step.household)
            }
        }
        deletion.revokedTokens = try revokeTokens(account: id, now: now)
        try deleteRecoveryCodes(account: id)
        try deleteLinkCodes(account: id)
        try deleteBlocks(involving: id)
        // Its identities no longer sign in; the Apple tokens kept for them are queued for
        // revocation (sent once this write is durable, retried while Apple cannot be reached).
        try unlinkAllIdentities(accountId: id, now: now)
        try revokeAppleTokens(accountId: id, now: now)
        try retireHandle(account.handle, account: id, until: now + AccountRecord.retiredHandleMs)
        try markAccountDeleted(id: id, at: now)
        return deletion
    }
}
