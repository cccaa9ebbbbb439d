/// Signing a device in. The ledger stays pinned to the first account it synced under; a
/// token of another account is stored but freezes shared editing (`accountChanged`) instead of
/// silently rebinding the ledger.
struct AccountFlow {
    let engine: SyncEngine
    var store: LedgerStore { engine.store }

    init(engine: SyncEngine) { self.engine = engine }

    /// What signing in did to the pinned account.
    enum Outcome: Sendable, Equatable {
        /// The ledger is (now) pinned to this account.
        case pinned(accountId: String, handle: String)
        /// Signed in as another account than the ledger's; shared editing is frozen.
        case accountChanged(pinned: String, signedIn: String)
    }

    /// Creates an account on the server and signs this device in with its token.
    func signup(handle: String, displayName: String, deviceName: String?) throws -> Outcome {
        let api = APIClient(transport: engine.api.transport)
        let created: Wire.AccountAndToken
        do { created = try api.signup(handle: handle, displayName: displayName, deviceName: deviceName) }
        catch { throw error.isUnreachable ? ClientError.offline(error.description) : ClientError.server(error) }
        guard let secret = created.token.secret else { throw ClientError.server(.invalidAnswer("no token secret")) }
        return try adopt(token: secret, tokenId: created.token.id, account: created.account)
    }

    /// Signs this device in with an existing token (checked with `GET /v1/me`).
    func login(token: String) throws -> Outcome {
        let api = APIClient(transport: engine.api.transport, token: token)
        let me: Wire.AccountAndToken
        do { me = try api.me() }
        catch { throw error.isUnreachable ? ClientError.offline(error.description) : ClientError.server(error) }
        return try adopt(token: token, tokenId: me.token.id, account: me.account)
    }

    /// Goes back to the token of the ledger's own account, kept when another account signed
    /// in; shared editing resumes. Works offline (the next sync checks the token).
    func restorePinned() throws -> Outcome {
        try store.transaction {
            guard let token = try store.string(.pinnedToken), let tokenId = try store.string(.pinnedTokenId),
                  let pinned = try store.string(.accountId) else {
                throw ClientError.invalid(field: "login --pinned", message: "needs a ledger signed in as another account than its own")
            }
            try store.set(.token, token)
            try store.set(.tokenId, tokenId)
            try store.set(.lastOutcome, nil)
            try clearSwitch()
            return .pinned(accountId: pinned, handle: try store.string(.accountHandle) ?? "")
        }
    }

    private func clearSwitch() throws {
        try store.set(.signedInAccountId, nil)
        try store.set(.signedInAccountHandle, nil)
        try store.set(.pinnedToken, nil)
        try store.set(.pinnedTokenId, nil)
        if try store.attention() == .accountChanged { try store.setAttention(nil) }
    }

    private func adopt(token: String, tokenId: String, account: Wire.Account) throws -> Outcome {
        let id = account.id.lowercased()
        return try store.transaction {
            let pinned = try store.string(.accountId)
            let localOnly = try store.phase() == .localOnly
            // Switching away from the ledger's account: keep its token to come back to.
            if let pinned, pinned != id, !localOnly, try store.string(.signedInAccountId) == nil,
               let current = try store.string(.token), let currentId = try store.string(.tokenId) {
                try store.set(.pinnedToken, current)
                try store.set(.pinnedTokenId, currentId)
            }
            try store.set(.token, token)
            try store.set(.tokenId, tokenId)
            try store.set(.lastOutcome, nil)
            if pinned == nil || pinned == id || localOnly {
                try store.set(.accountId, id)
                try store.set(.accountHandle, account.handle)
                try clearSwitch()
                return .pinned(accountId: id, handle: account.handle)
            }
            try store.set(.signedInAccountId, id)
            try store.set(.signedInAccountHandle, account.handle)
            try store.setAttention(.accountChanged)
            return .accountChanged(pinned: pinned ?? "", signedIn: id)
        }
    }
}
