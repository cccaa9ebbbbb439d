import Foundation
import LedgerModel

extension Ledger {
    /// Registers this device for wakes: after a change to the household made on another
    /// device, the server asks the app maker's push gateway to send this device a silent,
    /// content-free push (the app then calls ``remoteNotificationReceived()``).
    ///
    /// `pushKey` is APNs' device token in hex (`deviceToken.map { String(format: "%02x", $0) }.joined()`);
    /// `appId` the app's id at the gateway. The key is remembered in the store: it is
    /// registered again after a sign-in, a recovery or any other change of this device's
    /// token, and removed from the server on sign-out. Offline (or signed out) the
    /// registration waits for the next sync. Throws `.invalidInput` for a key that is not
    /// hex, and `.server` when the server refuses (`push_not_configured`: it has no gateway).
    /// A device paired to a child registers its own child token's key the same way: it is
    /// woken by its household's changes (a parent's decision on its request among them) and
    /// pulls its child's feed.
    public func registerForPush(appId: String, pushKey: String) async throws {
        let key = pushKey.lowercased()
        guard (32...512).contains(key.utf8.count), key.utf8.count % 2 == 0,
              key.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) }) else {
            throw LedgerError.invalidInput(field: "pushKey", message: "The push key is not a device token in hex.")
        }
        guard !appId.isEmpty, appId.utf8.count <= 200 else {
            throw LedgerError.invalidInput(field: "appId", message: "The app id must be 1 to 200 characters.")
        }
        let changed = meta(.pushAppId) != appId || meta(.pushKey) != key
        try publicErrors {
            try store.transaction {
                try store.set(.pushAppId, appId)
                try store.set(.pushKey, key)
                if changed { try store.set(.pushRegisteredTokenId, nil) }
            }
        }
        do {
            try await registerPushIfNeeded()
        } catch LedgerError.offline {
            // Registered at the next sync that reaches the server.
        }
    }

    /// The push key is removed from the server (this device is woken no more) and forgotten here.
    public func unregisterForPush() async throws {
        if let tokenId = meta(.pushRegisteredTokenId), await currentToken() != nil {
            try await onServer(retry: RetryPolicy(maxAttempts: 1)) { engine in try engine.api.unregisterPush(tokenId: tokenId) }
        }
        try publicErrors {
            try store.transaction {
                try store.set(.pushAppId, nil)
                try store.set(.pushKey, nil)
                try store.set(.pushRegisteredTokenId, nil)
            }
        }
    }

    /// For `BGAppRefreshTask` (and `didReceiveRemoteNotification`'s completion handler):
    /// pushes pending changes and pulls the household's (a child's device: its child's
    /// feed), within `deadline`; true when
    /// anything changed (something was uploaded, or other devices' changes arrived).
    /// Past the deadline the sync is cancelled (the ledger stays consistent) and
    /// `.cancelled` is thrown.
    public func backgroundRefresh(deadline: Date) async throws -> Bool {
        let seconds = deadline.timeIntervalSinceNow
        guard seconds > 0 else { throw LedgerError.cancelled }
        let report = try await withThrowingTaskGroup(of: SyncReport?.self) { group in
            group.addTask { try await self.syncNow() }
            group.addTask {
                try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let report = first else { throw LedgerError.cancelled }
            return report
        }
        return report.pushed + report.pulledChildren + report.pulledTransactions > 0
    }

    /// Registers the remembered push key for the current token when the server does not
    /// have it yet (after a sign-in, a recovery, a token change, or a registration made
    /// offline). Throws what the server said.
    func registerPushIfNeeded() async throws {
        guard let appId = meta(.pushAppId), let key = meta(.pushKey), let tokenId = meta(.tokenId),
              meta(.pushRegisteredTokenId) != tokenId, server != nil || transportOverride != nil,
              await currentToken() != nil else { return }
        try await onServer(retry: RetryPolicy(maxAttempts: 1)) { engine in
            try engine.api.registerPush(tokenId: tokenId, appId: appId, pushKey: key)
        }
        try publicErrors { try store.set(.pushRegisteredTokenId, tokenId) }
    }

    /// `registerPushIfNeeded`, for paths where a failure must not fail what they did.
    func registerPushQuietly() async {
        _ = try? await registerPushIfNeeded()
    }

    /// Before the token is revoked on sign-out: the server drops its push key (revoking the
    /// token does too; this covers a revocation that cannot reach the server now).
    func unregisterPushForSignOut(tokenId: String) async {
        if meta(.pushRegisteredTokenId) == tokenId {
            _ = try? await onServer(retry: RetryPolicy(maxAttempts: 1)) { engine in try engine.api.unregisterPush(tokenId: tokenId) }
        }
        try? setMeta(.pushRegisteredTokenId, nil)
    }
}
