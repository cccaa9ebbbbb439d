import Foundation

/// Request bodies of the identity endpoints (API.md v1.2 "Identity").
private struct AuthBody: Encodable {
    var idToken: String
    var nonce: String?
    var authorizationCode: String?
    var handle: String?
    var displayName: String?
    var deviceName: String?
}
private struct LinkIdentityBody: Encodable { var provider: String; var idToken: String; var nonce: String? }
private struct RedeemBody: Encodable { var code: String; var deviceName: String? }
private struct RecoverBody: Encodable { var handle: String; var code: String; var deviceName: String?; var revokeOtherTokens: Bool }
private struct OwnerBody: Encodable { var accountId: String }
private struct DeleteAccountBody: Encodable { var confirmHandle: String; var ownedSharedHouseholds: String }
private struct NoFields: Encodable {}

extension APIClient {
    /// `POST /v1/auth/{provider}` (no token): signs in with an OpenID Connect ID token, making
    /// the account when `handle` is given and the identity is not linked yet.
    func signIn(provider: String, idToken: String, nonce: String?, authorizationCode: String?,
                handle: String?, displayName: String?, deviceName: String?) throws(APIError) -> Wire.SignIn {
        let answer = try json("POST", "/v1/auth/\(APIClient.escape(provider))", Wire.SignIn.self,
                              body: AuthBody(idToken: idToken, nonce: nonce, authorizationCode: authorizationCode,
                                             handle: handle, displayName: displayName, deviceName: deviceName))
        var body = answer.body
        if body.created == nil { body.created = answer.status == 201 }
        return body
    }

    /// `GET /v1/me/identities`.
    func identities() throws(APIError) -> [Wire.Identity] {
        try json("GET", "/v1/me/identities", Wire.Page<Wire.Identity>.self).body.items
    }

    /// `POST /v1/me/identities`: links another identity to the signed-in account.
    func linkIdentity(provider: String, idToken: String, nonce: String?) throws(APIError) -> Wire.Identity {
        try json("POST", "/v1/me/identities", Wire.Identity.self,
                 body: LinkIdentityBody(provider: provider, idToken: idToken, nonce: nonce)).body
    }

    /// `DELETE /v1/me/identities/{id}`.
    func unlinkIdentity(id: String) throws(APIError) {
        _ = try call("DELETE", "/v1/me/identities/\(APIClient.escape(id))")
    }

    /// `POST /v1/link-codes`: a single-use code for another device of this account.
    func createLinkCode() throws(APIError) -> Wire.LinkCode {
        try json("POST", "/v1/link-codes", Wire.LinkCode.self, body: NoFields()).body
    }

    /// `POST /v1/link-codes/redeem` (no token).
    func redeem(code: String, deviceName: String?) throws(APIError) -> Wire.Redeemed {
        try json("POST", "/v1/link-codes/redeem", Wire.Redeemed.self, body: RedeemBody(code: code, deviceName: deviceName)).body
    }

    /// `POST /v1/me/recovery-codes`: a new set, replacing any earlier one.
    func createRecoveryCodes() throws(APIError) -> Wire.RecoveryCodes {
        try json("POST", "/v1/me/recovery-codes", Wire.RecoveryCodes.self, body: NoFields()).body
    }

    /// `GET /v1/me/recovery-codes`.
    func recoveryCodeStatus() throws(APIError) -> Wire.RecoveryCodeStatus {
        try json("GET", "/v1/me/recovery-codes", Wire.RecoveryCodeStatus.self).body
    }

    /// `POST /v1/accounts/recover` (no token): a new token for the account of `handle`.
    func recover(handle: String, code: String, deviceName: String?, revokeOtherTokens: Bool) throws(APIError) -> Wire.AccountAndToken {
        try json("POST", "/v1/accounts/recover", Wire.AccountAndToken.self,
                 body: RecoverBody(handle: handle, code: code, deviceName: deviceName, revokeOtherTokens: revokeOtherTokens)).body
    }

    /// `POST /v1/households/{id}/owner`: hands the household to an accepted read-write participant.
    func transferOwnership(householdId: String, accountId: String) throws(APIError) -> Wire.TransferredHousehold {
        try json("POST", "/v1/households/\(householdId)/owner", Wire.TransferredHousehold.self,
                 body: OwnerBody(accountId: accountId)).body
    }

    /// `DELETE /v1/me`: deletes the signed-in account.
    func deleteAccount(confirmHandle: String, deletingSharedHouseholds: Bool) throws(APIError) {
        let body: [UInt8]
        do {
            body = Array(try JSONEncoder().encode(DeleteAccountBody(confirmHandle: confirmHandle,
                                                                    ownedSharedHouseholds: deletingSharedHouseholds ? "delete" : "refuse")))
        } catch {
            throw .invalidAnswer("cannot encode request: \(error)")
        }
        _ = try call("DELETE", "/v1/me", body: body)
    }

    /// `GET /v1/households`, every page: the households the caller owns or takes part in.
    func households() throws(APIError) -> [Wire.Household] {
        try everyPage("/v1/households", of: Wire.Household.self)
    }
}
