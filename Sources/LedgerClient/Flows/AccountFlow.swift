/// Signing a device in. The ledger stays pinned to the first account it synced under; a
/// token of another account is stored but freezes shared editing (`accountChanged`) instead of
/// silently rebinding the ledger.
public struct AccountFlow {
    public let engine: SyncEngine
    var store: LedgerStore { engine.store }

    public init(engine: SyncEngine) { self.engine = engine }

    /// What signing in did to the pinned account.
    public enum Outcome: Sendable, Equatable {
        /// The ledger is (now) pinned to this account.
        case pinned(accountId: String, handle: String)
        /// Signed in as another account than the ledger's; shared editing is frozen.
        case accountChanged(pinned: String, signedIn: String)
    }

    /// Creates an account on the server and signs this device in with its token.
    public func signup(handle: String, displayName: String, deviceName: String?) throws -> Outcome {
        let api = APIClient(transport: engine.api.transport)
        let created: Wire.AccountAndToken
        do { created = try api.signup(handle: handle, displayName: displayName, deviceName: deviceName) }
        catch { throw error.isUnreachable ? LedgerError.offline(error.description) : LedgerError.server(error) }
        guard let secret = created.token.secret else { throw LedgerError.server(.invalidAnswer("no token secret")) }
        return try adopt(token: secret, tokenId: created.token.id, account: created.account)
    }

    /// Signs this device in with an existing token (checked with `GET /v1/me`).
    public func login(token: String) throws -> Outcome {
        let api = APIClient(transport: engine.api.transport, token: token)
        let me: Wire.AccountAndToken
        do { me = try api.me() }
        catch { throw error.isUnreachable ? LedgerError.offline(error.description) : LedgerError.server(error) }
        return try adopt(token: token, tokenId: me.token.id, account: me.account)
    }

    private func adopt(token: String, tokenId: String, account: Wire.Account) throws -> Outcome {
        let id = account.id.lowercased()
        return try store.transaction {
            try store.set(.token, token)
            try store.set(.tokenId, tokenId)
            try store.set(.lastOutcome, nil)
            let pinned = try store.string(.accountId)
            let localOnly = try store.phase() == .localOnly
            if pinned == nil || pinned == id || localOnly {
                try store.set(.accountId, id)
                try store.set(.accountHandle, account.handle)
                try store.set(.signedInAccountId, nil)
                try store.set(.signedInAccountHandle, nil)
                if try store.attention() == .accountChanged { try store.setAttention(nil) }
                return .pinned(accountId: id, handle: account.handle)
            }
            try store.set(.signedInAccountId, id)
            try store.set(.signedInAccountHandle, account.handle)
            try store.setAttention(.accountChanged)
            return .accountChanged(pinned: pinned ?? "", signedIn: id)
        }
    }
}
