import LedgerModel

/// Why storage refused an operation, in the ledger's terms. The HTTP edge chooses each
/// one's status and problem code (`LedgerStorageError+HTTP.swift`).
package enum LedgerStorageError: Error, Sendable, Equatable {
    // Not there (or not to be revealed to this caller).
    case householdNotFound
    case childNotFound
    case transactionNotFound
    /// No such schedule (or it was deleted).
    case scheduleNotFound
    /// No such request of a child.
    case requestNotFound
    case tokenNotFound
    case participantNotFound
    case invitationNotFound
    /// The caller has not blocked that account.
    case blockNotFound
    case unknownHandle(String)
    /// The caller's account or token is gone (revoked since the request was authenticated).
    case callerUnknown

    // Access.
    case accessRevoked
    case readOnly
    case ownerOnly

    // Identity conflicts.
    case handleTaken(String)
    /// The id is taken by a household of another account (or, on create, by any household).
    case householdIdTaken(String)
    /// An idempotent create (PUT) named a household of another account.
    case householdOfAnotherAccount(String)
    case childIdTaken(String)
    /// A different schedule (or a deleted one) has this id; `existing` is it.
    case scheduleIdTaken(ScheduleRecord)
    /// A record the caller may not see holds this id.
    case idTaken(String)
    /// A different request has this id; `existing` is it.
    case requestIdTaken(RequestRecord)
    /// The request was already decided otherwise (the first decision stored is final); `current` is it.
    case requestDecided(RequestRecord)
    /// The id is the payment of a request that is not approved: only its approval writes it.
    case requestNotApproved
    /// The change feed holds a kind of record the child's feed does not filter (a fault of
    /// the server: answered 500 rather than sent to a child's device unfiltered).
    case unfilteredChildFeed
    /// A different transaction has this id; `existing` is it.
    case transactionIdTaken(LedgerTransaction)
    /// The id derived from an `Idempotency-Key` is held by a different transaction, `existing`.
    case idempotencyKeyReused(key: String, existing: LedgerTransaction)
    /// The id is reserved for the reversal of `of`.
    case reversalIdReserved(String, of: LedgerTransaction)
    /// The target is already reversed by `by`.
    case alreadyReversed(target: String, by: LedgerTransaction)

    // Ledger rules.
    /// A timestamp (`field`) more than 24 hours ahead of the server's clock, `now`.
    case clockSkew(field: String, now: Int64)
    case notReversible
    case reversalIdMismatch(expected: String)
    case reversalAmountMismatch(expected: Int64)
    case balanceOverflow
    case nothingToUndo
    /// The newest undoable transaction is `current`, not the `expected` one.
    case undoTargetChanged(current: LedgerTransaction, expected: String)
    /// If-Match named another version; `current` is the record's API form now.
    case preconditionFailed(currentTag: String, current: JSONValue)

    // Quotas (a limit of 0 is none and never refuses).
    /// The account owns `limit` households already.
    case tooManyHouseholds(limit: Int)
    /// The household holds `limit` children already (archived ones count).
    case tooManyChildren(limit: Int)
    /// The child has `limit` schedules already.
    case tooManySchedules(limit: Int)
    /// The inviter has `pending` invitations out, or the invitee has that many waiting (or
    /// that many from this inviter), and `limit` is the most allowed.
    case tooManyInvitations(InvitationQuota, limit: Int, pending: Int64)
    /// The account holds `limit` live tokens already.
    case tooManyTokens(limit: Int)

    // Sharing.
    /// The household is not shared (reading or ending its share).
    case notShared
    /// Inviting needs a share first.
    case shareRequired
    case cannotInviteSelf

    // Sync.
    /// A sync position from a database that went back in time (a restore, a rewind, or a
    /// position ahead of the household's): the device must reconcile.
    case historyRewound
    case syncTokenExpired
    /// The device's token was revoked while its request was being answered.
    case tokenRevoked

    // App Store subscriptions.
    /// The household has no registered subscription.
    case noSubscription
    /// A verified App Store notification could not be stored (the App Store sends it again).
    case notificationNotStored

    /// The database cannot be reached (or is shutting down); nothing was changed, unless
    /// `commitOutcomeUnknown` (the connection died during COMMIT).
    case unavailable(commitOutcomeUnknown: Bool)
    /// The server is stopping and takes no more writes; nothing was changed (another
    /// server process, or this one restarted, takes the same request).
    case shuttingDown
    /// The database is locked by another connection past the wait allowed; nothing was
    /// changed and the same request may be sent again shortly.
    case busy
    /// The disk holding the database is full: nothing of the write was stored. Writes fail
    /// alike until there is room again (`LedgerStorage.isOutOfSpace`).
    case outOfSpace
}

/// Whose pending invitations a quota counts.
package enum InvitationQuota: String, Sendable {
    /// Those out from the inviter's households.
    case inviter
    /// Those waiting for the invitee, from any household.
    case invitee
    /// Those waiting for the invitee from the inviter's households.
    case inviterForInvitee
}
