/// Push registration rules: a device token's push key is registered and removed only by its
/// own account; any other token id, live or not, is the same unknown token. A child's
/// device (a child token) registers and removes only its own token's key.
extension LedgerWriting {
    /// Registers `appId`/`pushKey` at `gateway` for `tokenId`, one of `caller`'s live tokens
    /// (else `tokenNotFound`), replacing what it had.
    package func registerPush(token tokenId: String, caller: Caller, appId: String, pushKey: String, gateway: String,
                              now: Int64) throws {
        try requireOwnLiveToken(tokenId, caller: caller)
        try pushWriting().upsertPushRegistration(PushRegistration(tokenId: tokenId, accountId: caller.accountId, child: caller.child,
                                                                  appId: appId, pushKey: pushKey, gateway: gateway, registeredAt: now))
    }

    /// Removes `tokenId`'s push registration (none is fine); `tokenNotFound` unless it is
    /// one of `caller`'s live tokens.
    package func unregisterPush(token tokenId: String, caller: Caller) throws {
        try requireOwnLiveToken(tokenId, caller: caller)
        _ = try pushWriting().deletePushRegistration(token: tokenId, pushKey: nil)
    }

    private func requireOwnLiveToken(_ tokenId: String, caller: Caller) throws {
        if caller.isChild {
            // A child token has no account: only its own id is its token.
            guard tokenId == caller.tokenId, try isActive(token: tokenId) else { throw LedgerStorageError.tokenNotFound }
            return
        }
        guard let t = try token(id: tokenId), t.accountId == caller.accountId, try isActive(token: tokenId) else {
            throw LedgerStorageError.tokenNotFound
        }
    }
}
