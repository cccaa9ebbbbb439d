@testable import LedgerClient

extension SyncEngine {
    /// Signs this engine's store up as a new account for engine-level tests: the token is kept
    /// in the store (as stores did before `Ledger` moved it to a `CredentialStore`), which
    /// the engine still reads when no token was handed to it.
    func signUpForTests(handle: String, displayName: String? = nil) throws {
        let created = try APIClient(transport: api.transport).signup(handle: handle, displayName: displayName ?? handle, deviceName: nil)
        try store.transaction {
            try store.set(.token, created.token.secret)
            try store.set(.tokenId, created.token.id)
            try store.set(.accountId, created.account.id.lowercased())
            try store.set(.accountHandle, created.account.handle)
        }
    }
}
