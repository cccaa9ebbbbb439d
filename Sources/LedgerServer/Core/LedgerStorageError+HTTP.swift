import LedgerCore
import LedgerModel

/// The one place where storage's domain errors become HTTP answers.
extension LedgerStorageError {
    /// The problem+json answer for this refusal.
    var apiError: APIError {
        switch self {
        case .householdNotFound: return .notFound("No such household.")
        case .childNotFound: return .notFound("No such child.")
        case .transactionNotFound: return .notFound("No such transaction.")
        case .scheduleNotFound: return .notFound("No such schedule.")
        case .requestNotFound: return .notFound("No such request.")
        case .tokenNotFound: return .notFound("No such token.")
        case .participantNotFound: return .notFound("No such participant.")
        case .invitationNotFound: return .notFound("No such invitation.")
        case .blockNotFound: return .notFound("You have not blocked that account.")
        case .unknownHandle(let h): return APIError(404, "unknown_handle", "No account has the handle \(h).")
        case .callerUnknown: return .unauthenticated()
        case .accessRevoked: return .accessRevoked
        case .readOnly: return .readOnly
        case .ownerOnly: return .ownerOnly
        case .handleTaken(let h): return APIError(409, "handle_taken", "The handle \(h) is taken.")
        case .householdIdTaken(let id): return APIError(409, "id_conflict", "A household with id \(id) already exists.")
        case .householdOfAnotherAccount(let id): return APIError(409, "id_conflict", "Household id \(id) belongs to another account.")
        case .childIdTaken(let id):
            return APIError(409, "id_conflict", "A different child with id \(id) already exists in this household.")
        case .scheduleIdTaken(let existing):
            return APIError(409, "id_conflict", "A different schedule with id \(existing.id) already exists in this household.",
                            current: existing.json)
        case .idTaken(let id): return APIError(409, "id_conflict", "The id \(id) is taken; choose another.")
        case .requestIdTaken(let existing):
            return APIError(409, "id_conflict", "A different request with id \(existing.id) already exists in this household.",
                            current: existing.json)
        case .requestDecided(let current):
            return APIError(409, "request_decided", "This request was already \(current.status.rawValue); the first decision "
                            + "stands.", current: current.json)
        case .unfilteredChildFeed: return .internal()
        case .requestNotApproved:
            return APIError(409, "request_not_approved", "This id is the payment of a request that is not approved; "
                            + "approve the request (POST …/requests/{requestId}/approve) to pay it.")
        case .transactionIdTaken(let existing):
            return APIError(409, "id_conflict", "A different transaction with id \(existing.id) already exists.", current: existing.json)
        case .idempotencyKeyReused(let key, let existing):
            return APIError(409, "id_conflict", "Idempotency-Key \"\(key)\" was already used for a different transaction "
                            + "(\(existing.id)); use a new key for a new transaction.", current: existing.json)
        case .reversalIdReserved(let id, let owner):
            return APIError(409, "id_reserved", "Id \(id) is reserved for the reversal of transaction \(owner.id).")
        case .alreadyReversed(let target, let by):
            return APIError(409, "id_conflict", "Transaction \(target) is already reversed by \(by.id).", current: by.json)
        case .clockSkew(let field, let now):
            return APIError(422, "clock_skew", "\(field) is more than 24 hours ahead of the server's clock "
                            + "(\(Timestamp.format(ms: now))); check the device's date and time.")
        case .notReversible: return APIError(422, "not_reversible", "A reversal cannot be reversed.")
        case .reversalIdMismatch(let expected):
            return APIError(422, "reversal_id_mismatch", "A reversal of this transaction must have id \(expected).")
        case .reversalAmountMismatch(let amount):
            return APIError(422, "reversal_amount_mismatch", "A reversal must take back exactly \(amount) from the same child.")
        case .balanceOverflow: return APIError(422, "balance_overflow", "This would take the balance outside the 64-bit range.")
        case .nothingToUndo: return APIError(422, "nothing_to_undo", "This child has no transaction left to undo.")
        case .undoTargetChanged(let current, let expected):
            return APIError(409, "undo_target_changed", "The newest transaction is \(current.id), not \(expected).",
                            current: current.json)
        case .preconditionFailed(let tag, let current): return Preconditions.failed(currentTag: tag, current: current)
        case .tooManyHouseholds(let limit):
            return APIError.quota("too_many_households", "An account may own at most \(limit) households; delete one first.",
                                  limit: limit)
        case .tooManyChildren(let limit):
            return APIError.quota("too_many_children", "A household may hold at most \(limit) children, archived ones included.",
                                  limit: limit)
        case .tooManySchedules(let limit):
            return APIError.quota("too_many_schedules", "A child may have at most \(limit) schedules; delete one first.",
                                  limit: limit)
        case .notShared: return APIError(404, "not_shared", "This household is not shared.")
        case .shareRequired: return APIError(409, "not_shared", "Share the household (POST …/share) before inviting parents.")
        case .cannotInviteSelf: return APIError(422, "cannot_invite_self", "You own this household; invite another parent.")
        case .tooManyInvitations(.inviter, let limit, let pending):
            return APIError.quota("too_many_invitations", "You have \(pending) pending invitations, the most allowed; wait for answers or withdraw some.",
                                  limit: limit, scope: InvitationQuota.inviter.rawValue)
        case .tooManyInvitations(.invitee, let limit, _):
            return APIError.quota("too_many_invitations", "That parent has the most pending invitations allowed (\(limit)) and must answer some first.",
                                  limit: limit, scope: InvitationQuota.invitee.rawValue)
        case .tooManyInvitations(.inviterForInvitee, let limit, _):
            return APIError.quota("too_many_invitations", "That parent already has \(limit) invitations from you waiting, the most allowed; "
                                  + "wait for an answer.", limit: limit, scope: InvitationQuota.inviterForInvitee.rawValue)
        case .tooManyTokens(let limit):
            return APIError.quota("too_many_tokens", "An account may hold at most \(limit) device tokens; revoke one first.", limit: limit)
        case .syncTokenExpired: return SyncPosition.expired
        case .historyRewound: return SyncPosition.rewound
        case .noSubscription: return APIError(404, "no_subscription", "No subscription is stored for this household.")
        case .notificationNotStored:
            return .serviceUnavailable("The notification could not be stored; send it again later.", retryAfter: 60)
        case .tokenRevoked: return .unauthenticated("The token was revoked.")
        case .unavailable(let unknown):
            return .serviceUnavailable(unknown ? "The database connection was lost while committing; retry with the same id."
                                               : "The database is unavailable; retry shortly.", retryAfter: 1)
        case .busy: return .serviceUnavailable("The database is busy; retry shortly.", retryAfter: 1)
        case .shuttingDown: return .serviceUnavailable("The server is shutting down.", retryAfter: 1)
        case .outOfSpace:
            var e = APIError(507, "insufficient_storage", "The server's disk is full; nothing was stored. Retry later.")
            e.headers.set("Retry-After", "10")
            return e
        }
    }

    /// The notification endpoint's answer when storing a verified notification failed: a
    /// refusal, or a 503 that already says when to retry (the database unreachable, the
    /// server shutting down), as it is; any other failure (a full disk, whose 507 the App
    /// Store would take as final; a busy database; a database error) is
    /// `notificationNotStored`, so the App Store sends the notification again instead of
    /// taking it as delivered. `unexpected`: worth logging.
    static func notificationFailure(_ error: any Error) -> (answer: APIError, unexpected: Bool) {
        let refusal = error as? LedgerStorageError
        if refusal != .busy, refusal != .outOfSpace, let known = refusal?.apiError ?? (error as? APIError),
           known.status < 500 || known.status == 503 {
            return (known, false)
        }
        return (notificationNotStored.apiError, true)
    }

    /// The `rejected` code of a pushed transaction this refusal stands for; nil when the
    /// push answers `conflict` instead (a different record holds the id).
    var pushRejectionCode: String? {
        switch self {
        case .transactionIdTaken, .idempotencyKeyReused: return nil
        case .childNotFound: return "unknown_child"
        case .transactionNotFound: return "unknown_transaction"
        case .alreadyReversed, .notReversible: return "not_reversible"
        default: return apiError.code
        }
    }
}

private extension APIError {
    init(_ status: Int, _ code: String, _ detail: String, current: JSONValue) {
        self.init(status, code, detail)
        extra["current"] = current
    }

    /// 503 `service_unavailable` with `Retry-After` (seconds).
    static func serviceUnavailable(_ detail: String, retryAfter: Int) -> APIError {
        var e = APIError(503, "service_unavailable", detail)
        e.headers.set("Retry-After", String(retryAfter))
        return e
    }

    /// A quota's refusal: 409 with its own `code`, the cap in `limit` (and which side's
    /// cap in `scope`, when there are two).
    static func quota(_ code: String, _ detail: String, limit: Int, scope: String? = nil) -> APIError {
        var e = APIError(409, code, detail)
        e.extra["limit"] = .int(Int64(limit))
        if let scope { e.extra["scope"] = .string(scope) }
        return e
    }
}
