import LedgerModel
import SQLiteKit

/// The caller's standing in a household.
struct Membership: Sendable {
    enum Role: String, Sendable { case owner, participant }
    enum Permission: String, Sendable { case readWrite, readOnly }

    let householdId: String
    let role: Role
    let permission: Permission
    let ownerAccountId: String

    var canWrite: Bool { permission == .readWrite }

    var accessJSON: JSONValue { .object(["role": .string(role.rawValue), "permission": .string(permission.rawValue)]) }
}

/// The access rules of API.md, applied to every route under `/v1/households/{id}`:
/// non-members get 404 (existence is not revealed), revoked or departed participants 403
/// `access_revoked`, read-only participants 403 `read_only` on writes, owner-only
/// operations 403 `owner_only`. Invitees who have not accepted are not members, also
/// after their invitation was withdrawn or they left before accepting (404).
enum Access {
    enum Need { case read, write, owner }

    static func check(_ db: SQLiteConnection, household: String, account: String, need: Need) throws -> Membership {
        guard let h = try db.queryOne("SELECT owner_account_id FROM households WHERE id = ?", [.text(household)]) else {
            throw APIError.notFound("No such household.")
        }
        let owner = h.string(0)
        if owner == account {
            return Membership(householdId: household, role: .owner, permission: .readWrite, ownerAccountId: owner)
        }
        guard let p = try db.queryOne("SELECT status, permission, accepted_at FROM participants WHERE household_id = ? AND account_id = ?",
                                      [.text(household), .text(account)]) else {
            throw APIError.notFound("No such household.")
        }
        switch p.string(0) {
        case "accepted":
            let perm = Membership.Permission(rawValue: p.string(1)) ?? .readOnly
            let m = Membership(householdId: household, role: .participant, permission: perm, ownerAccountId: owner)
            switch need {
            case .read: return m
            case .write: if !m.canWrite { throw APIError.readOnly }; return m
            case .owner: throw APIError.ownerOnly
            }
        case "revoked", "left":
            // Only someone who was a member lost access; an invitation withdrawn or
            // abandoned before it was accepted never made the caller one.
            if p.isNull(2) { throw APIError.notFound("No such household.") }
            throw APIError.accessRevoked
        default:
            // invited or declined: not a member.
            throw APIError.notFound("No such household.")
        }
    }
}
