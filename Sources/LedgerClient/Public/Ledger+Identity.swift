import Foundation
import LedgerModel

extension Ledger {
    /// The sentence an app shows before and after deleting an account (Apple's guidance):
    /// deleting the account does not end an App Store subscription.
    public static let subscriptionCancellationNotice =
        "Deleting your account does not cancel an App Store subscription. If you subscribed, cancel it in the App Store: open Settings, tap your name, then Subscriptions."

    // MARK: Signing in with an identity, a link code or a recovery code

    /// Signs this device in with a sign-in provider's identity token (Sign in with Apple:
    /// `provider` "apple"; or an OpenID Connect provider the server offers by name). Pass the
    /// raw `nonce` whose SHA-256 went into the provider's request. An identity linked to no
    /// account throws `.identityNotLinked`, unless `newAccount` is given: then the account is
    /// made and the identity linked to it. Afterwards the account's only household, if it has
    /// exactly one, is opened on this device (see `SignInOutcome.openedHousehold`).
    /// - Parameters:
    ///   - deviceName: how this device appears in the account's device list; default none.
    ///   - authorizationCode: Sign in with Apple's authorization code, which lets the server
    ///     revoke the Apple sign-in when the account is deleted; default none.
    @discardableResult
    public func signIn(provider: String, idToken: String, nonce: String? = nil, newAccount: NewAccount? = nil,
                       deviceName: String? = nil, authorizationCode: String? = nil) async throws -> SignInOutcome {
        try refuseOnChildDevice()
        // One try: the server accepts a nonce once, so a second try of a lost answer is refused anyway.
        let answer = try await onServer(retry: .once) { engine in
            try engine.anonymousAPI().signIn(provider: provider, idToken: idToken, nonce: nonce, authorizationCode: authorizationCode,
                                             handle: newAccount?.handle, displayName: newAccount?.displayName, deviceName: deviceName)
        }
        return try await signedIn(answer.account, token: answer.token, created: answer.created ?? false)
    }

    /// Signs this device in with a link code made on a signed-in device of the account
    /// (`createLinkCode()`), typed in any case with or without its hyphens. A used, expired or
    /// unknown code throws `.linkCodeInvalid`. Afterwards the account's only household, if it has
    /// exactly one, is opened on this device.
    @discardableResult
    public func redeem(linkCode: String, deviceName: String? = nil) async throws -> SignInOutcome {
        try refuseOnChildDevice()
        let code = linkCode.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !code.isEmpty else { throw LedgerError.linkCodeInvalid }
        let answer = try await onServer(retry: .once) { engine in
            try engine.anonymousAPI().redeem(code: code, deviceName: deviceName)
        }
        guard let account = answer.account else {
            throw LedgerError.notAllowed(reason: "That code pairs a child's device; a parent's device signs in with a code from the parent's account.")
        }
        return try await signedIn(account, token: answer.token, created: false)
    }

    /// Signs this device in with the account's handle and one of its recovery codes
    /// (`generateRecoveryCodes()`); each code works once. Any failure — unknown handle, wrong or
    /// used code — throws `.recoveryFailed`. With `revokeOtherDevices`, every other device of
    /// the account is signed out (a lost or stolen phone). Afterwards the account's only
    /// household, if it has exactly one, is opened on this device.
    @discardableResult
    public func recover(handle: String, code: String, revokeOtherDevices: Bool = false,
                        deviceName: String? = nil) async throws -> SignInOutcome {
        try refuseOnChildDevice()
        let answer = try await onServer(retry: .once) { engine in
            try engine.anonymousAPI().recover(handle: handle.trimmingCharacters(in: .whitespacesAndNewlines),
                                              code: code.trimmingCharacters(in: .whitespacesAndNewlines),
                                              deviceName: deviceName, revokeOtherTokens: revokeOtherDevices)
        }
        return try await signedIn(answer.account, token: answer.token, created: false)
    }

    private func signedIn(_ account: Wire.Account, token: Wire.Token, created: Bool) async throws -> SignInOutcome {
        guard let secret = token.secret else {
            throw LedgerError.server(code: "invalid_answer", status: 0, detail: "The server sent no token.")
        }
        try await adopt(token: secret, tokenId: token.id, account: account)
        return await afterSignIn(account, created: created)
    }

    // MARK: The signed-in account's ways in

    /// Links another sign-in (e.g. Sign in with Apple) to the signed-in account, so it signs in
    /// to this account on any device. Throws `.invalidIdentityToken` for a token the server
    /// refuses, and `.server(code: "identity_in_use", …)` when it is linked to another account.
    @discardableResult
    public func linkIdentity(provider: String, idToken: String, nonce: String? = nil) async throws -> LinkedIdentity {
        let wire = try await flow(retry: .once) { engine in
            try engine.callServer(allowingSwitch: true) { (api: APIClient) throws(APIError) in
                try api.linkIdentity(provider: provider, idToken: idToken, nonce: nonce)
            }
        }
        return LinkedIdentity(wire)
    }

    /// The sign-ins linked to the signed-in account.
    public func linkedIdentities() async throws -> [LinkedIdentity] {
        try await flow { engine in
            try engine.callServer(allowingSwitch: true) { (api: APIClient) throws(APIError) in try api.identities() }
        }.map(LinkedIdentity.init)
    }

    /// Unlinks a sign-in from the signed-in account.
    public func unlinkIdentity(_ id: String) async throws {
        try await flow { engine in
            try engine.callServer(allowingSwitch: true) { (api: APIClient) throws(APIError) in try api.unlinkIdentity(id: id) }
        }
    }

    /// A single-use code, valid for 10 minutes, that signs another device in to this account
    /// (`redeem(linkCode:deviceName:)` there).
    public func createLinkCode() async throws -> LinkCode {
        let wire = try await flow { engine in
            try engine.callServer(allowingSwitch: true) { (api: APIClient) throws(APIError) in try api.createLinkCode() }
        }
        guard let expires = Timestamp.parse(wire.expiresAt) else {
            throw LedgerError.server(code: "invalid_answer", status: 0, detail: "The link code has no readable expiry.")
        }
        return LinkCode(text: LinkCode.display(wire.code), expiresAt: Date(ms: expires), url: wire.url.flatMap(URL.init(string:)))
    }

    /// Ten new one-time recovery codes for the signed-in account, replacing any earlier set.
    /// The server keeps only their hashes: show them once and let the person keep them safe.
    public func generateRecoveryCodes() async throws -> [String] {
        try await flow { engine in
            try engine.callServer(allowingSwitch: true) { (api: APIClient) throws(APIError) in try api.createRecoveryCodes() }
        }.codes
    }

    /// How many recovery codes of the signed-in account are left.
    public func recoveryCodeStatus() async throws -> RecoveryCodeStatus {
        let wire = try await flow { engine in
            try engine.callServer(allowingSwitch: true) { (api: APIClient) throws(APIError) in try api.recoveryCodeStatus() }
        }
        return RecoveryCodeStatus(remaining: wire.remaining, createdAt: wire.createdAt.flatMap(Timestamp.parse).map(Date.init(ms:)))
    }

    // MARK: Deleting the account

    /// Deletes the signed-in account on the server: every device of it is signed out, its
    /// handle is held back for 30 days, and its records in other households keep their
    /// authorship. `confirmHandle` must be the account's handle. An account that owns shared
    /// households is refused with `.ownerOfSharedHousehold(ids)` unless
    /// `deletingSharedHouseholds`, which deletes them for everyone (or hand them over first with
    /// `transferOwnership(to:)`).
    ///
    /// Offer an export first: with `exportingTo`, the ledger is written there (`.json.gz`)
    /// before anything is deleted, and nothing is deleted when that fails. Tell the person that
    /// an App Store subscription is not cancelled by this (`subscriptionCancellationNotice`).
    ///
    /// This device keeps the ledger's records as a local-only ledger (unless the app removes the
    /// store file) and is signed out. When this device had switched to the deleted account
    /// from a shared ledger's own account, it goes back to that account instead.
    @discardableResult
    public func deleteAccount(confirmHandle: String, deletingSharedHouseholds: Bool,
                              exportingTo export: URL? = nil) async throws -> AccountDeletion {
        if let export { try await self.export(to: export) }
        let handle = confirmHandle.trimmingCharacters(in: .whitespacesAndNewlines)
        let switched = try await flow { engine in
            try AccountFlow(engine: engine).deleteAccount(confirmHandle: handle, deletingSharedHouseholds: deletingSharedHouseholds)
        }
        do {
            if switched, let pinned = try await credentials.pinnedToken() {
                try await credentials.setToken(pinned)
            } else {
                try await credentials.removeToken()
            }
            try await credentials.setPinnedToken(nil)
        } catch {
            throw LedgerError.store(underlying: error)
        }
        signedOut = await currentToken() == nil
        await publish()
        return AccountDeletion(exportedTo: export, subscriptionNotice: Self.subscriptionCancellationNotice)
    }
}

extension SyncEngine {
    /// A client without this device's token, for the calls that sign a device in.
    func anonymousAPI() -> APIClient {
        var client = APIClient(transport: api.transport, timeout: api.timeout)
        client.cancellation = cancellation
        return client
    }
}

extension LinkCode {
    /// `XXXX-XXXX-XXXX` for a code of twelve letters and digits sent without hyphens; any
    /// other text as the server sent it.
    static func display(_ code: String) -> String {
        let plain = code.filter { $0 != "-" && $0 != " " }
        guard plain.count == 12, plain.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber) }) else { return code }
        let chars = Array(plain.uppercased())
        return [chars[0..<4], chars[4..<8], chars[8..<12]].map { String($0) }.joined(separator: "-")
    }
}

extension LinkedIdentity {
    init(_ i: Wire.Identity) {
        self.init(id: i.id, provider: i.provider, issuer: i.issuer, linkedAt: i.linkedAt.flatMap(Timestamp.parse).map(Date.init(ms:)))
    }
}
