import Foundation
import HTTPServer
import LedgerModel
import SQLiteKit

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
    static func register(_ r: inout Router) {
        r.add("POST", "/v1/households/{id}/share", createShare)
        r.add("GET", "/v1/households/{id}/share", getShare)
        r.add("DELETE", "/v1/households/{id}/share", deleteShare)
        r.add("POST", "/v1/households/{id}/share/participants", invite)
        r.add("PATCH", "/v1/households/{id}/share/participants/{accountId}", patchParticipant)
        r.add("DELETE", "/v1/households/{id}/share/participants/{accountId}", removeParticipant)
        InvitationRoutes.register(&r)
    }

    static let notShared = APIError(404, "not_shared", "This household is not shared.")

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
        return ctx.write(touching: [household]) { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .owner)
            let existed = try ShareStore.isShared(db, household: household)
            if !existed { try ShareStore.setShared(db, household: household, true) }
            return RequestContext.jsonResponse(existed ? 200 : 201, try ShareStore.shareJSON(db, household: household),
                                               headers: [("Location", "/v1/households/\(household)/share")])
        }
    }

    static func getShare(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        return try ctx.services.reads.with { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .read)
            guard try ShareStore.isShared(db, household: household) else { throw notShared }
            return ctx.json(200, try ShareStore.shareJSON(db, household: household))
        }
    }

    static func deleteShare(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        return ctx.write(touching: [household]) { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .owner)
            guard try ShareStore.isShared(db, household: household) else { throw notShared }
            try db.run("""
                UPDATE participants SET status = 'revoked', updated_at = ?
                WHERE household_id = ? AND status IN ('invited', 'accepted')
                """, [.integer(Timestamp.nowMs()), .text(household)])
            try ShareStore.setShared(db, household: household, false)
            return RequestContext.noContent()
        }
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
        return ctx.write(touching: [household]) { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .owner)
            guard try ShareStore.isShared(db, household: household) else {
                throw APIError(409, "not_shared", "Share the household (POST …/share) before inviting parents.")
            }
            guard let account = try db.queryOne("SELECT id FROM accounts WHERE handle = ?", [.text(handle!)])?.string(0) else {
                throw APIError(404, "unknown_handle", "No account has the handle \(handle!).")
            }
            if account == c.accountId {
                throw APIError(422, "cannot_invite_self", "You own this household; invite another parent.")
            }
            let configuration = ctx.services.configuration
            let existing = try ShareStore.find(db, household: household, account: account)
            if let existing, existing.status.isActive { return RequestContext.jsonResponse(200, existing.json) }
            try Quotas.checkInvitations(db, inviter: c.accountId, invitee: account,
                                        inviterLimit: configuration.maxPendingInvitationsPerInviter,
                                        inviteeLimit: configuration.maxPendingInvitationsPerInvitee)
            if existing != nil {
                try ShareStore.update(db, household: household, account: account, status: .invited,
                                      permission: perm, newInvitation: true)
            } else {
                try ShareStore.insert(db, household: household, account: account, permission: perm!)
            }
            let p = try ShareStore.find(db, household: household, account: account)!
            return RequestContext.jsonResponse(201, p.json,
                                               headers: [("Location", "/v1/households/\(household)/share/participants/\(account)")])
        }
    }

    static func patchParticipant(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let account = try ctx.id("accountId")
        var b = try ctx.body()
        b.allowOnly(["permission"])
        let perm = permission(&b, required: true)
        try b.check()
        return ctx.write(touching: [household]) { db in
            _ = try Access.check(db, household: household, account: c.accountId, need: .owner)
            guard let p = try ShareStore.find(db, household: household, account: account), p.status.isActive else {
                throw APIError.notFound("No such participant.")
            }
            if p.permission != perm! {
                try ShareStore.update(db, household: household, account: account, status: p.status, permission: perm)
            }
            return RequestContext.jsonResponse(200, try ShareStore.find(db, household: household, account: account)!.json)
        }
    }

    static func removeParticipant(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let account = try ctx.id("accountId")
        return ctx.write(touching: [household]) { db in
            if account == c.accountId,
               let me = try ShareStore.find(db, household: household, account: account), me.status.isActive {
                // The participant leaves (or withdraws from a pending invitation).
                try ShareStore.update(db, household: household, account: account, status: .left)
                return RequestContext.noContent()
            }
            _ = try Access.check(db, household: household, account: c.accountId, need: .owner)
            guard let p = try ShareStore.find(db, household: household, account: account) else {
                throw APIError.notFound("No such participant.")
            }
            if p.status.isActive {
                try ShareStore.update(db, household: household, account: account, status: .revoked)
            }
            return RequestContext.noContent()
        }
    }
}
