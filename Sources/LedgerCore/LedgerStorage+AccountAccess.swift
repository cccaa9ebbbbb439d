import LedgerModel

/// Reads about how an account is reached besides its tokens (link codes, recovery codes)
/// and about ending it. Part of `LedgerReading`; kept apart so the seam's main protocol
/// stays about the ledger. Rules over these: `LedgerWriting+LinkCodes.swift`,
/// `+RecoveryCodes.swift`, `+OwnerTransfer.swift`, `+AccountDeletion.swift`.
package protocol AccountAccessReading {
    /// How many of the account's recovery codes are unused, and when the set was made.
    func recoveryCodeSummary(account: String) throws -> RecoveryCodeSummary
    /// One lookup for a recovery attempt: the account with `handle` and, of its codes, the
    /// one whose hash is `hash` (see `RecoveryCandidate`).
    func recoveryCandidate(handle: String, hash: [UInt8]) throws -> RecoveryCandidate
    /// Whether `handle` belonged to an account deleted less than 30 days before `now`.
    func isHandleRetired(_ handle: String, now: Int64) throws -> Bool
    /// The households `account` owns, by id.
    func ownedHouseholds(account: String) throws -> [OwnedHousehold]
    /// The households where `account` is an invited or accepted participant, by id, with its status.
    func activeParticipations(account: String) throws -> [(household: String, status: Participant.Status)]
}

/// Writes about link codes, recovery codes, attempt counters, owners and deleted accounts.
/// Part of `LedgerWriting`; like its other primitives these check nothing beyond the
/// database's constraints (the rules do).
package protocol AccountAccessWriting: AccountAccessReading {
    // MARK: link codes
    /// Stores a new code under its hash; forgets expired codes (of every account) and the
    /// account's oldest live ones past `LinkCodeRecord.perAccount - 1`.
    func insertLinkCode(_ record: LinkCodeRecord, hash: [UInt8]) throws
    /// Takes the code with this hash when it is live at `now` and has seen fewer than
    /// `maxFailures` failures in its bucket (0: no cap): deletes it and answers its
    /// account and stored hash; nil otherwise. Two concurrent takes of one code: one wins.
    func takeLinkCode(hash: [UInt8], now: Int64, maxFailures: Int) throws -> (accountId: String, storedHash: [UInt8])?
    /// Counts one failed redemption against every live code of `bucket`.
    func countLinkCodeFailure(bucket: String, now: Int64) throws
    /// Forgets the account's link codes.
    func deleteLinkCodes(account: String) throws

    // MARK: recovery codes
    /// Replaces the account's codes with these hashes, made at `at`.
    func replaceRecoveryCodes(account: String, hashes: [[UInt8]], at: Int64) throws
    /// Marks the code used; false when it was not there unused (a concurrent use won).
    func useRecoveryCode(account: String, hash: [UInt8], at: Int64) throws -> Bool
    func deleteRecoveryCodes(account: String) throws

    // MARK: attempt counters
    /// Counts one attempt of `key` under `limit` at `now` and answers nil while the
    /// window's count stays within the limit, else the milliseconds until the window ends.
    /// Atomic: concurrent attempts (other processes too) each take their own count.
    func takeAttempt(_ limit: AttemptLimit, key: String, now: Int64) throws -> Int64?
    /// Takes back one attempt of `key` (one that succeeded: only failures count).
    func returnAttempt(scope: String, key: String) throws
    /// Forgets the count of `key`.
    func clearAttempts(scope: String, key: String) throws

    // MARK: owners and deleted accounts
    /// Makes `account` the household's owner (the caller advances its feed).
    func setOwner(household: String, account: String) throws
    /// Removes the participant row (an invitation that never was a membership, or the new
    /// owner's own row).
    func deleteParticipant(household: String, account: String) throws
    /// Forgets the blocks `account` made and those made of it.
    func deleteBlocks(involving account: String) throws
    /// Marks the account deleted at `at` (`deleted_accounts`): its handle becomes
    /// `AccountRecord.deletedHandle(id:)`, its display name `AccountRecord.deletedDisplayName`.
    func markAccountDeleted(id: String, at: Int64) throws
    /// Refuses `handle` to new accounts until `until`.
    func retireHandle(_ handle: String, account: String, until: Int64) throws
}
