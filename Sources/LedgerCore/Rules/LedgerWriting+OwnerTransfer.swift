import Foundation
import LedgerModel

extension LedgerWriting {
    /// `POST /v1/households/{id}/owner`: the owner hands the household to `account`, one of
    /// its accepted read-write participants, in one transaction; the previous owner stays
    /// as an accepted read-write participant. The household's feed advances (its record,
    /// with the new `ownerAccountId`, and every member's `access`). The subscription stays
    /// with the household. Answers the household as the previous owner now sees it.
    package func transferOwnership(household: String, owner: String, to account: String, now: Int64) throws -> (HouseholdRecord, Membership) {
        _ = try membership(household: household, account: owner, need: .owner)
        guard account != owner, let p = try participant(household: household, account: account), p.status == .accepted,
              p.permission == .readWrite else { throw AccountAccessError.notAParticipant }
        guard let h = try self.household(id: household) else { throw LedgerStorageError.householdNotFound }
        try setOwner(household: household, account: account)
        // An owner holds no participant row; the previous owner takes one (again, if it once had one).
        try deleteParticipant(household: household, account: account)
        if try participant(household: household, account: owner) == nil {
            try insertParticipant(household: household, account: owner, permission: .readWrite, invitation: UUID().lowercased, at: now)
        }
        try updateParticipant(household: household, account: owner, status: .accepted, permission: .readWrite,
                              newInvitation: nil, at: now)
        let seq = try nextSeq(household: household)
        try updateHousehold(id: household, name: h.name, currency: h.currency, shared: h.shared, modifiedAt: now, seq: seq)
        guard let updated = try self.household(id: household) else { throw LedgerStorageError.householdNotFound }
        return (updated, Membership(householdId: household, role: .participant, permission: .readWrite, ownerAccountId: account))
    }
}
