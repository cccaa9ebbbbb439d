import LedgerCore
import LedgerModel

/// `DELETE /v1/me` `{confirmHandle, ownedSharedHouseholds?}`: ends the caller's account
/// (`LedgerWriting.deleteAccount`). Answers 204; the account's tokens are then 401, its
/// parked long-polls end, and the server logs `{"event":"account_deleted",…}`.
enum AccountDeletionRoutes {
    static func delete(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        var b = try ctx.body()
        b.allowOnly(["confirmHandle", "ownedSharedHouseholds"])
        let confirm = b.string("confirmHandle", required: true)
        var mode = OwnedSharedHouseholds.refuse
        if let raw = b.string("ownedSharedHouseholds") {
            if let m = OwnedSharedHouseholds(rawValue: raw) { mode = m } else { b.fail("ownedSharedHouseholds", "must be refuse or delete") }
        }
        try b.check()
        let handle = confirm!, choice = mode
        let notifier = ctx.services.notifier, logger = ctx.services.logger, identity = ctx.services.identity
        return ctx.write({ w in try w.deleteAccount(c.accountId, confirmHandle: handle, ownedShared: choice, now: Timestamp.nowMs()) },
                         answer: { deletion in
            // Once durable: the tokens' parked long-polls answer 401.
            notifier.notify(tokens: Set(deletion.revokedTokens))
            // Apple's tokens go out now rather than at the outbox's next round.
            identity?.revocationsQueued()
            logger.log(["event": "account_deleted", "account": .string(c.accountId),
                        "deletedHouseholds": .int(Int64(deletion.deletedHouseholds.count)),
                        "leftHouseholds": .int(Int64(deletion.leftHouseholds.count))])
            return RequestContext.noContent()
        })
    }
}
