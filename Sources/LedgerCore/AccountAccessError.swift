/// Why an owner transfer or an account deletion was refused, in the ledger's terms (the
/// HTTP edge chooses each one's status and code: `AccountAccessError+HTTP.swift`).
package enum AccountAccessError: Error, Sendable, Equatable {
    /// The account to hand a household to is not one of its accepted read-write participants.
    case notAParticipant
    /// The handle the caller typed to confirm a deletion is not the account's.
    case confirmationMismatch
    /// The account owns these households, which have other members (by id).
    case ownerOfSharedHousehold([String])
}
