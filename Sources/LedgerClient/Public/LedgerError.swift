import Foundation

/// Why a `Ledger` operation failed. Messages are sentences for app users; apps (and the
/// command line) may add their own wording for what to do next.
public enum LedgerError: Error, LocalizedError, Sendable, Equatable {
    /// The server could not be reached; local changes are kept and uploaded later.
    case offline
    /// Not signed in, or the server no longer accepts this device's sign-in.
    case unauthenticated
    /// Shared editing is frozen until the user acts.
    case attentionRequired(AttentionReason)
    /// No such child, transaction, invitation or participant.
    case notFound
    /// An amount that is zero, negative or too large, or a balance that would overflow.
    case invalidAmount
    /// The child has no transaction left to undo.
    case nothingToUndo
    /// Joining would replace a different ledger held on this device; pass `replacingLocal: true`.
    case joinWouldReplaceLocalLedger
    /// A name, note or other value was refused (`field` says which, `message` why).
    case invalidInput(field: String, message: String)
    /// The operation does not fit the ledger's state (e.g. sharing a ledger that is already
    /// shared, or an owner leaving their own household); `reason` says why.
    case notAllowed(reason: String)
    /// The device's storage failed (disk full, database busy or damaged). Never a server problem.
    case store(underlying: any Error)
    /// The server refused the request.
    case server(code: String, status: Int, detail: String)
    /// The task was cancelled; the ledger is consistent and nothing local was lost.
    case cancelled
    /// The identity signed in with is linked to no account; pass a `NewAccount` to make one,
    /// or sign in another way and link it.
    case identityNotLinked
    /// The provider's identity token was refused. `reason` is the server's word for the check
    /// that failed: `malformed`, `unsupported_algorithm`, `unknown_key`, `signature`, `issuer`,
    /// `audience`, `expired`, `not_yet_valid` or `nonce`.
    case invalidIdentityToken(reason: String)
    /// The link code is unknown, used or expired (the server does not say which).
    case linkCodeInvalid
    /// The handle and recovery code do not open an account (unknown handle, wrong or used code
    /// alike).
    case recoveryFailed
    /// The account owns these shared households; transfer them to another parent, or delete
    /// them with the account.
    case ownerOfSharedHousehold([HouseholdID])

    public var errorDescription: String? {
        switch self {
        case .offline: return "The server can't be reached right now. Your changes are saved on this device and will be uploaded later."
        case .unauthenticated: return "You're not signed in, or this device's sign-in is no longer accepted. Please sign in again."
        case .attentionRequired(let reason): return "\(reason.explanation) \(reason.suggestion)"
        case .notFound: return "That item could not be found."
        case .invalidAmount: return "That amount isn't valid. Use an amount above zero and at most 1,000,000,000.00."
        case .nothingToUndo: return "There is nothing left to undo for this child."
        case .joinWouldReplaceLocalLedger:
            return "This device holds a different ledger with children or transactions. It is kept unless you choose to replace it (a copy is exported first)."
        case .invalidInput(let field, let message): return "The \(field) \(message)."
        case .notAllowed(let reason): return reason
        case .store(let underlying): return "This device's storage could not be used (\((underlying as NSError).localizedDescription))."
        case .server(let code, let status, let detail):
            return detail.isEmpty ? "The server refused the request (\(status) \(code))." : "The server refused the request: \(detail)"
        case .cancelled: return "The operation was cancelled."
        case .identityNotLinked:
            return "This sign-in is not linked to an account yet. Create an account with it, or sign in another way and link it."
        case .invalidIdentityToken(let reason):
            switch reason {
            case "expired", "not_yet_valid": return "The sign-in took too long or the device's clock is off. Please sign in again."
            case "nonce": return "This sign-in was already used or does not belong to this request. Please sign in again."
            default: return "The sign-in could not be verified. Please sign in again."
            }
        case .linkCodeInvalid: return "That code is not valid: it may be mistyped, used already or expired. Make a new one on a signed-in device."
        case .recoveryFailed: return "That handle and recovery code don't open an account. Check both; each code works only once."
        case .ownerOfSharedHousehold(let ids):
            let count = ids.count == 1 ? "a shared household" : "\(ids.count) shared households"
            return "This account owns \(count). Hand each to another parent first, or delete them with the account."
        }
    }

    /// The reason of `.notAllowed` for a call a device paired to a child does not offer.
    public static let childDeviceReason = "This device is paired to a child: it shows that child's money and makes requests; the rest is for a parent's device."

    public static func == (a: LedgerError, b: LedgerError) -> Bool {
        switch (a, b) {
        case (.offline, .offline), (.unauthenticated, .unauthenticated), (.notFound, .notFound),
             (.invalidAmount, .invalidAmount), (.nothingToUndo, .nothingToUndo), (.cancelled, .cancelled),
             (.joinWouldReplaceLocalLedger, .joinWouldReplaceLocalLedger), (.identityNotLinked, .identityNotLinked),
             (.linkCodeInvalid, .linkCodeInvalid), (.recoveryFailed, .recoveryFailed):
            return true
        case let (.attentionRequired(x), .attentionRequired(y)): return x == y
        case let (.invalidInput(f1, m1), .invalidInput(f2, m2)): return f1 == f2 && m1 == m2
        case let (.notAllowed(r1), .notAllowed(r2)): return r1 == r2
        case let (.store(e1), .store(e2)): return String(describing: e1) == String(describing: e2)
        case let (.server(c1, s1, d1), .server(c2, s2, d2)): return c1 == c2 && s1 == s2 && d1 == d2
        case let (.invalidIdentityToken(r1), .invalidIdentityToken(r2)): return r1 == r2
        case let (.ownerOfSharedHousehold(h1), .ownerOfSharedHousehold(h2)): return h1 == h2
        default: return false
        }
    }
}
