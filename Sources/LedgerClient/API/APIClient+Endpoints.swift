import Foundation
/// Request bodies that have no wire type of their own.
private struct SignupBody: Encodable { var handle: String; var displayName: String; var deviceName: String? }
private struct HouseholdBody: Encodable { var name: String; var currency: String? }
private struct InviteBody: Encodable { var handle: String; var permission: String }
private struct PermissionBody: Encodable { var permission: String }
private struct Empty: Codable {}
private struct PushBody: Encodable { var appId: String; var pushKey: String }

extension APIClient {
    /// `POST /v1/accounts`: a new account and this device's token.
    func signup(handle: String, displayName: String, deviceName: String?) throws(APIError) -> Wire.AccountAndToken {
        try json("POST", "/v1/accounts", Wire.AccountAndToken.self,
                 body: SignupBody(handle: handle, displayName: displayName, deviceName: deviceName)).body
    }

    /// `GET /v1/me`: the account and token this client authenticates as.
    func me() throws(APIError) -> Wire.AccountAndToken {
        try json("GET", "/v1/me", Wire.AccountAndToken.self).body
    }

    /// `DELETE /v1/tokens/{id}`: revokes a token (this device's signs it out).
    func deleteToken(id: String) throws(APIError) {
        _ = try call("DELETE", "/v1/tokens/\(id)")
    }

    /// `PUT /v1/tokens/{id}/push`: registers the token's push key (its wakes go through the
    /// server's default gateway).
    func registerPush(tokenId: String, appId: String, pushKey: String) throws(APIError) {
        let body = (try? JSONEncoder().encode(PushBody(appId: appId, pushKey: pushKey))).map { Array($0) } ?? []
        _ = try call("PUT", "/v1/tokens/\(tokenId)/push", body: body)
    }

    /// `DELETE /v1/tokens/{id}/push`: the token is woken no more.
    func unregisterPush(tokenId: String) throws(APIError) {
        _ = try call("DELETE", "/v1/tokens/\(tokenId)/push")
    }

    /// `PUT /v1/households/{id}`: idempotent create with the device's id (201 or 200).
    func putHousehold(id: String, name: String, currency: String?) throws(APIError) -> Answer<Wire.Household> {
        try json("PUT", "/v1/households/\(id)", Wire.Household.self, body: HouseholdBody(name: name, currency: currency))
    }

    /// `GET /v1/households/{id}`.
    func household(id: String) throws(APIError) -> Wire.Household {
        try json("GET", "/v1/households/\(id)", Wire.Household.self).body
    }

    /// `GET /v1/households/{id}/changes`; `wait` is the long-poll in seconds (0…60).
    func changes(householdId: String, since: String?, limit: Int = 500, wait: Int = 0) throws(APIError) -> Wire.ChangesPage {
        var path = "/v1/households/\(householdId)/changes?limit=\(limit)"
        if let since { path += "&since=\(APIClient.escape(since))" }
        if wait > 0 { path += "&wait=\(wait)" }
        return try FeedPageDecoder.decode(call("GET", path, timeout: timeout + Double(wait)).body)
    }

    /// `POST /v1/households/{id}/changes` with at most 400 records.
    func push(householdId: String, _ batch: Wire.PushRequest) throws(APIError) -> [Wire.PushResult] {
        try json("POST", "/v1/households/\(householdId)/changes", Wire.PushResponse.self, body: batch).body.results
    }

    /// `POST /v1/households/{id}/reconcile`: which of this device's transactions the server lacks.
    func reconcile(householdId: String, _ request: Wire.ReconcileRequest) throws(APIError) -> Wire.ReconcileResponse {
        try json("POST", "/v1/households/\(householdId)/reconcile", Wire.ReconcileResponse.self, body: request).body
    }

    /// `POST /v1/households/{id}/share` (201 created, 200 existing).
    func createShare(householdId: String) throws(APIError) -> Wire.Share {
        try json("POST", "/v1/households/\(householdId)/share", Wire.Share.self, body: Empty()).body
    }

    /// `GET /v1/households/{id}/share`.
    func share(householdId: String) throws(APIError) -> Wire.Share {
        try json("GET", "/v1/households/\(householdId)/share", Wire.Share.self).body
    }

    /// `DELETE /v1/households/{id}/share`: every participant loses access.
    func deleteShare(householdId: String) throws(APIError) {
        _ = try call("DELETE", "/v1/households/\(householdId)/share")
    }

    /// `POST /v1/households/{id}/share/participants`.
    func invite(householdId: String, handle: String, permission: Permission) throws(APIError) -> Wire.Participant {
        try json("POST", "/v1/households/\(householdId)/share/participants", Wire.Participant.self,
                 body: InviteBody(handle: handle, permission: permission.rawValue)).body
    }

    /// `PATCH /v1/households/{id}/share/participants/{accountId}`: changes a participant's permission.
    func setPermission(householdId: String, accountId: String, permission: Permission) throws(APIError) -> Wire.Participant {
        try json("PATCH", "/v1/households/\(householdId)/share/participants/\(accountId)", Wire.Participant.self,
                 body: PermissionBody(permission: permission.rawValue)).body
    }

    /// `DELETE /v1/households/{id}/share/participants/{accountId}`: revoke, or leave when it is the caller.
    func removeParticipant(householdId: String, accountId: String) throws(APIError) {
        _ = try call("DELETE", "/v1/households/\(householdId)/share/participants/\(accountId)")
    }

    /// `GET /v1/invitations`, every page.
    func invitations() throws(APIError) -> [Wire.Invitation] {
        try everyPage("/v1/invitations", of: Wire.Invitation.self)
    }

    /// `GET path` of a paged list, every page (a thousand items each), in order.
    func everyPage<Item: Codable & Sendable>(_ path: String, of _: Item.Type) throws(APIError) -> [Item] {
        var all: [Item] = []
        var cursor: String?
        repeat {
            var page = path + "?limit=1000"
            if let cursor { page += "&cursor=\(APIClient.escape(cursor))" }
            let answer = try json("GET", page, Wire.Page<Item>.self).body
            all += answer.items
            cursor = answer.nextCursor
        } while cursor != nil
        return all
    }

    /// `POST /v1/invitations/{id}/decline`.
    func decline(invitationId: String) throws(APIError) {
        _ = try call("POST", "/v1/invitations/\(invitationId)/decline")
    }

    /// `POST /v1/invitations/{id}/accept`: the household joined.
    func accept(invitationId: String) throws(APIError) -> Wire.Household {
        try json("POST", "/v1/invitations/\(invitationId)/accept", Wire.Household.self, body: Empty()).body
    }
}
