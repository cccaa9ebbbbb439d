import Foundation
import HTTPServer
import LedgerCore
import LedgerModel

/// The household's private share and its participants. There is never a public link:
/// `publicPermission` is always `none`. Invitations addressed to the caller live in
/// `InvitationRoutes`.
///
/// Decisions where API.md is silent (also in `openapi.yaml`):
/// - `DELETE …/share` of a household that is not shared: 404 `not_shared`.
/// - Inviting a handle that is already `invited` or `accepted`: 200, participant unchanged.
///   `declined`, `revoked` and `left` participants are invited again: 201, new `invitationId`.
/// - Inviting yourself: 422 `cannot_invite_self`.
/// - `PATCH` of a participant that is not `invited` or `accepted`: 404 `not_found`.
/// - `DELETE …/participants/{accountId}`: the owner revoking a participant that is already
///   inactive answers 204 unchanged; an account never invited is 404.
enum SharingRoutes {
    /// The permission member of a body: `readWrite` or `readOnly`.
    static func permission(_ b: inout JSONBody, required: Bool) -> Membership.Permission? {
        guard let raw = b.string("permission", required: required) else { return nil }
        guard let p = Membership.Permission(rawValue: raw) else {
            b.fail("permission", "must be readWrite or readOnly")
            return nil
        }
        return p
    }

    static func createShare(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        var b = try ctx.optionalBody()
        b.allowOnly(["publicPermission"])
        if b.has("publicPermission"), let p = b.string("publicPermission"), p != "none" {
            throw APIError(422, "public_sharing_disabled",
                           "Households are shared privately with invited parents only; publicPermission must be none.")
        }
        try b.check()
        return ctx.write({ w in try w.share(household: household, owner: c.accountId) }, answer: { shared in
            RequestContext.jsonResponse(shared.isCreated ? 201 : 200, shareJSON(household, shared.record),
                                        headers: [("Location", "/v1/households/\(household)/share")])
        })
    }

    static func getShare(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let participants = try ctx.read { r in try r.share(household: household, account: c.accountId) }
        return ctx.json(200, shareJSON(household, participants))
    }

    static func deleteShare(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        return ctx.write({ w in try w.unshare(household: household, owner: c.accountId, now: Timestamp.nowMs()) },
                         answer: { _ in RequestContext.noContent() })
    }

    static func invite(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        var b = try ctx.body()
        b.allowOnly(["handle", "permission"])
        let handle = b.string("handle", required: true)
        if let h = handle, case .failure(let e) = Validation.handle(h) { b.fail("handle", e.message) }
        let perm = permission(&b, required: true)
        try b.check()
        let invitee = handle!, level = perm!
        let configuration = ctx.services.configuration
        let limits = InvitationLimits(perInviter: configuration.maxPendingInvitationsPerInviter,
                                      perInvitee: configuration.maxPendingInvitationsPerInvitee,
                                      perInviterForInvitee: configuration.maxPendingInvitationsPerInviterForInvitee)
        // Handles are not to be tried one after another: past the failed lookups allowed,
        // the account's invitations wait for its minute to end.
        let lookups = ctx.services.handleLookupLimiter
        if let retry = lookups.retryAfter(c.accountId) {
            var e = APIError(429, "rate_limited", "Too many invitations to handles that found no one; retry in \(retry) s.")
            e.headers.set("Retry-After", String(retry))
            throw e
        }
        return ctx.write({ w -> Result<Written<Participant>, LedgerStorageError> in
            // A lookup that found no one commits nothing: answered (and counted) below.
            do {
                return .success(try w.invite(household: household, owner: c.accountId, handle: invitee, permission: level,
                                             limits: limits, now: Timestamp.nowMs()))
            } catch let e as LedgerStorageError {
                guard case .unknownHandle = e else { throw e }
                return .failure(e)
            }
        }, answer: { outcome in
            let invited: Written<Participant>
            switch outcome {
            case .success(let w): invited = w
            case .failure(let e):
                lookups.fail(c.accountId)
                throw e
            }
            guard invited.isCreated else { return RequestContext.jsonResponse(200, invited.record.json) }
            return RequestContext.jsonResponse(201, invited.record.json, headers: [
                ("Location", "/v1/households/\(household)/share/participants/\(invited.record.accountId)"),
            ])
        })
    }

    static func patchParticipant(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let account = try ctx.id("accountId")
        var b = try ctx.body()
        b.allowOnly(["permission"])
        let perm = permission(&b, required: true)
        try b.check()
        let level = perm!
        return ctx.write({ w in
            try w.setPermission(household: household, owner: c.accountId, account: account, permission: level, now: Timestamp.nowMs())
        }, answer: { p in RequestContext.jsonResponse(200, p.json) })
    }

    static func removeParticipant(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let account = try ctx.id("accountId")
        return ctx.write({ w in
            try w.removeParticipant(household: household, caller: c.accountId, account: account, now: Timestamp.nowMs())
        }, answer: { _ in RequestContext.noContent() })
    }

    /// `{householdId, publicPermission:"none", participants:[…]}`, participants in invitation order.
    static func shareJSON(_ household: String, _ participants: [Participant]) -> JSONValue {
        .object([
            "householdId": .string(household), "publicPermission": .string("none"),
            "participants": .array(participants.map(\.json)),
        ])
    }
}

extension Participant {
    /// The API form: `{accountId, handle, displayName, role, permission, status, invitationId}`;
    /// a deleted account's handle is null (its display name is `Deleted account`).
    var json: JSONValue {
        .object([
            "accountId": .string(accountId), "handle": AccountRecord.isDeletedHandle(handle) ? .null : .string(handle),
            "displayName": .string(displayName),
            "role": .string("participant"), "permission": .string(permission.rawValue),
            "status": .string(status.rawValue), "invitationId": .string(invitationId),
        ])
    }
}
