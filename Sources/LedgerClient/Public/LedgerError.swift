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
        }
    }

    public static func == (a: LedgerError, b: LedgerError) -> Bool {
        switch (a, b) {
        case (.offline, .offline), (.unauthenticated, .unauthenticated), (.notFound, .notFound),
             (.invalidAmount, .invalidAmount), (.nothingToUndo, .nothingToUndo), (.cancelled, .cancelled),
             (.joinWouldReplaceLocalLedger, .joinWouldReplaceLocalLedger):
            return true
        case let (.attentionRequired(x), .attentionRequired(y)): return x == y
        case let (.invalidInput(f1, m1), .invalidInput(f2, m2)): return f1 == f2 && m1 == m2
        case let (.notAllowed(r1), .notAllowed(r2)): return r1 == r2
        case let (.store(e1), .store(e2)): return String(describing: e1) == String(describing: e2)
        case let (.server(c1, s1, d1), .server(c2, s2, d2)): return c1 == c2 && s1 == s2 && d1 == d2
        default: return false
        }
    }
}
