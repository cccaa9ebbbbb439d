import Foundation
import LedgerModel
import SQLiteKit

/// The SQL of a household's private share: participants, invitations and the `shared` flag.
enum ShareStore {
    /// Participant statuses, as stored and as answered.
    enum Status: String, Sendable {
        case invited, accepted, declined, revoked, left

        /// Invited or accepted: the participant still holds (or may still take) access.
        var isActive: Bool { self == .invited || self == .accepted }
    }

    /// One participant row joined with its account.
    struct Participant {
        var householdId: String
        var accountId: String
        var handle: String
        var displayName: String
        var permission: Membership.Permission
        var status: Status
        var invitationId: String
        var invitedAt: Int64

        var json: JSONValue {
            .object([
                "accountId": .string(accountId), "handle": .string(handle), "displayName": .string(displayName),
                "role": .string("participant"), "permission": .string(permission.rawValue),
                "status": .string(status.rawValue), "invitationId": .string(invitationId),
            ])
        }
    }

    static let participantColumns = """
        p.household_id, p.account_id, a.handle, a.display_name, p.permission, p.status, p.invitation_id, p.invited_at
        """

    static func participant(_ r: SQLiteRow) -> Participant {
        Participant(householdId: r.string(0), accountId: r.string(1), handle: r.string(2), displayName: r.string(3),
                    permission: Membership.Permission(rawValue: r.string(4)) ?? .readOnly,
                    status: Status(rawValue: r.string(5)) ?? .revoked, invitationId: r.string(6), invitedAt: r.int(7))
    }

    /// The participant row of `account` in `household`, if it was ever invited.
    static func find(_ db: SQLiteConnection, household: String, account: String) throws -> Participant? {
        try db.queryOne("""
            SELECT \(participantColumns) FROM participants p JOIN accounts a ON a.id = p.account_id
            WHERE p.household_id = ? AND p.account_id = ?
            """, [.text(household), .text(account)]).map(participant)
    }

    /// The participant row holding invitation `invitation`, only when it is addressed to `account`.
    static func find(_ db: SQLiteConnection, invitation: String, account: String) throws -> Participant? {
        try db.queryOne("""
            SELECT \(participantColumns) FROM participants p JOIN accounts a ON a.id = p.account_id
            WHERE p.invitation_id = ? AND p.account_id = ?
            """, [.text(invitation), .text(account)]).map(participant)
    }

    /// Whether the household is currently shared.
    static func isShared(_ db: SQLiteConnection, household: String) throws -> Bool {
        try db.queryOne("SELECT shared FROM households WHERE id = ?", [.text(household)])?.bool(0) ?? false
    }

    /// `{householdId, publicPermission:"none", participants:[…]}`, participants in invitation order.
    static func shareJSON(_ db: SQLiteConnection, household: String) throws -> JSONValue {
        let rows = try db.query("""
            SELECT \(participantColumns) FROM participants p JOIN accounts a ON a.id = p.account_id
            WHERE p.household_id = ? ORDER BY p.invited_at, p.rowid
            """, [.text(household)])
        return .object([
            "householdId": .string(household), "publicPermission": .string("none"),
            "participants": .array(rows.map { participant($0).json }),
        ])
    }

    /// Records a change members can see: advances the household's change sequence so the
    /// sync feed reports the new `access`.
    @discardableResult
    static func bump(_ db: SQLiteConnection, household: String) throws -> Int64 {
        try LedgerStore.nextSeq(db, household)
    }

    /// Sets the `shared` flag; the household record changes, so it gets a new change tag.
    static func setShared(_ db: SQLiteConnection, household: String, _ shared: Bool) throws {
        let seq = try bump(db, household: household)
        try db.run("UPDATE households SET shared = ?, change_tag = ?, household_seq = ? WHERE id = ?",
                   [.bool(shared), .text(LedgerStore.tag(seq)), .integer(seq), .text(household)])
    }

    /// Changes a participant's status (and optionally its permission and invitation).
    static func update(_ db: SQLiteConnection, household: String, account: String, status: Status,
                       permission: Membership.Permission? = nil, newInvitation: Bool = false) throws {
        let now = Timestamp.nowMs()
        if newInvitation {
            // A new invitation has not been accepted yet.
            try db.run("""
                UPDATE participants SET status = ?, permission = COALESCE(?, permission), invitation_id = ?,
                    invited_at = ?, updated_at = ?, accepted_at = NULL WHERE household_id = ? AND account_id = ?
                """, [.text(status.rawValue), .optionalText(permission?.rawValue), .text(UUID().lowercased),
                      .integer(now), .integer(now), .text(household), .text(account)])
        } else {
            try db.run("""
                UPDATE participants SET status = ?1, permission = COALESCE(?2, permission), updated_at = ?3,
                    accepted_at = CASE WHEN ?1 = 'accepted' THEN COALESCE(accepted_at, ?3) ELSE accepted_at END
                WHERE household_id = ?4 AND account_id = ?5
                """, [.text(status.rawValue), .optionalText(permission?.rawValue), .integer(now),
                      .text(household), .text(account)])
        }
        try bump(db, household: household)
    }

    /// A first invitation of `account`.
    static func insert(_ db: SQLiteConnection, household: String, account: String, permission: Membership.Permission) throws {
        let now = Timestamp.nowMs()
        try db.run("""
            INSERT INTO participants (household_id, account_id, permission, status, invitation_id, invited_at, updated_at)
            VALUES (?, ?, ?, 'invited', ?, ?, ?)
            """, [.text(household), .text(account), .text(permission.rawValue), .text(UUID().lowercased),
                  .integer(now), .integer(now)])
        try bump(db, household: household)
    }
}
