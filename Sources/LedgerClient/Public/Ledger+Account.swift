import Foundation
import LedgerModel

extension Ledger {
    /// The account this device is signed in as; nil when signed out.
    public var account: Account? {
        get async {
            guard await currentToken() != nil else { return nil }
            if let id = try? store.string(.signedInAccountId) {
                return Account(id: id, handle: (try? store.string(.signedInAccountHandle)) ?? nil ?? "", displayName: meta(.signedInAccountDisplayName) ?? "")
            }
            guard let id = try? store.string(.accountId) else { return nil }
            return Account(id: id, handle: (try? store.string(.accountHandle)) ?? nil ?? "", displayName: meta(.accountDisplayName) ?? "")
        }
    }

    /// The account a shared ledger belongs to, when another one is signed in (shared editing is
    /// then frozen with `.accountChanged`).
    public var ledgerAccountWhileSwitched: Account? {
        guard (try? store.string(.signedInAccountId)) ?? nil != nil, let id = (try? store.string(.accountId)) ?? nil else { return nil }
        return Account(id: id, handle: (try? store.string(.accountHandle)) ?? nil ?? "", displayName: meta(.accountDisplayName) ?? "")
    }

    /// Creates an account on the server and signs this device in to it.
    public func signUp(handle: String, displayName: String, deviceName: String? = nil) async throws {
        try refuseOnChildDevice()
        let created = try await onServer(token: nil) { engine in
            try APIClient(transport: engine.api.transport).signup(handle: handle, displayName: displayName, deviceName: deviceName)
        }
        guard let secret = created.token.secret else {
            throw LedgerError.server(code: "invalid_answer", status: 0, detail: "The server sent no token.")
        }
        try await adopt(token: secret, tokenId: created.token.id, account: created.account)
    }

    /// Signs this device in with an existing token (checked with the server). Signing in to
    /// another account than a shared ledger's freezes shared editing (`.accountChanged`)
    /// instead of moving the ledger to it.
    public func signIn(token: String) async throws {
        try refuseOnChildDevice()
        let me = try await onServer(token: token) { engine in try engine.api.me() }
        try await adopt(token: token, tokenId: me.token.id, account: me.account)
    }

    /// Goes back to the ledger's own account after another account signed in; shared
    /// editing resumes. Works offline (the next sync checks the sign-in).
    public func signInToLedgerAccount() async throws {
        guard let pinned = try await storedPinnedToken(), let ledgerAccount = try publicErrors({ try store.string(.accountId) }) else {
            throw LedgerError.notAllowed(reason: "This device is signed in to this ledger's own account.")
        }
        _ = ledgerAccount
        do { try await credentials.setToken(pinned) } catch { throw LedgerError.store(underlying: error) }
        try publicErrors {
            try store.transaction {
                try store.set(.tokenId, try store.string(.pinnedTokenId))
                try store.set(.pinnedTokenId, nil)
                try store.setLastOutcome(nil)
                try clearSwitch()
            }
        }
        try? await credentials.setPinnedToken(nil)
        signedOut = false
        await publish()
    }

    /// Signs this device out: its token is revoked on the server when it can be reached and
    /// forgotten here either way. The ledger and its pending changes stay.
    public func signOut() async throws {
        if let tokenId = try publicErrors({ try store.string(.tokenId) }), server != nil || transportOverride != nil,
           await currentToken() != nil {
            await unregisterPushForSignOut(tokenId: tokenId)
            do {
                try await onServer(retry: RetryPolicy(maxAttempts: 1)) { engine in
                    let api = engine.api
                    _ = try RetryPolicy(maxAttempts: 1).run { () throws(APIError) in try api.deleteToken(id: tokenId) }
                }
            } catch LedgerError.cancelled {
                throw LedgerError.cancelled
            } catch {
                // Unreachable or already revoked: forgetting the token here is what matters.
            }
        }
        do { try await credentials.removeToken() } catch { throw LedgerError.store(underlying: error) }
        try publicErrors {
            try store.transaction {
                try store.set(.tokenId, nil)
                try store.setLastOutcome(nil)
            }
        }
        signedOut = true
        await publish()
    }

    private func storedPinnedToken() async throws -> String? {
        do { return try await credentials.pinnedToken() } catch { throw LedgerError.store(underlying: error) }
    }

    private func clearSwitch() throws {
        try store.set(.signedInAccountId, nil)
        try store.set(.signedInAccountHandle, nil)
        try store.set(.signedInAccountDisplayName, nil)
        if try store.attention() == .accountChanged { try store.setAttention(nil) }
    }

    /// Stores a new sign-in. The ledger stays pinned to the first account it was shared under.
    func adopt(token: String, tokenId: String, account: Wire.Account) async throws {
        let id = account.id.lowercased()
        let (pinned, localOnly, switched) = try publicErrors {
            (try store.string(.accountId), try store.phase() == .localOnly, try store.string(.signedInAccountId) != nil)
        }
        let keepsLedgerAccount = pinned == nil || pinned == id || localOnly
        do {
            // Switching away from the ledger's account: keep its token to come back to.
            if !keepsLedgerAccount, !switched, let current = await currentToken() {
                try await credentials.setPinnedToken(current)
                try publicErrors { try store.set(.pinnedTokenId, try store.string(.tokenId)) }
            }
            try await credentials.setToken(token)
            if keepsLedgerAccount { try await credentials.setPinnedToken(nil) }
        } catch let error as LedgerError {
            throw error
        } catch {
            throw LedgerError.store(underlying: error)
        }
        try publicErrors {
            try store.transaction {
                try store.set(.tokenId, tokenId)
                try store.setLastOutcome(nil)
                if keepsLedgerAccount {
                    try store.set(.accountId, id)
                    try store.set(.accountHandle, account.handle)
                    try store.set(.accountDisplayName, account.displayName)
                    try store.set(.pinnedTokenId, nil)
                    try clearSwitch()
                } else {
                    try store.set(.signedInAccountId, id)
                    try store.set(.signedInAccountHandle, account.handle)
                    try store.set(.signedInAccountDisplayName, account.displayName)
                    try store.setAttention(.accountChanged)
                }
            }
        }
        signedOut = false
        if !keepsLedgerAccount { emit(.attentionRequired(.accountChanged)) }
        await publish()
        // The new token is woken like the old one was.
        await registerPushQuietly()
    }
}
