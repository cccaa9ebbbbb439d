/// Errors a device reports to the person using it; each is one plain sentence.
enum ClientError: Error, Equatable, Sendable, CustomStringConvertible {
    case childNotFound(String)
    case ambiguousChild(String)
    case transactionNotFound(String)
    case invalid(field: String, message: String)
    /// Shared edits are frozen until the user acts.
    case frozen(AttentionReason)
    case nothingToUndo(String)
    case notReversible
    case balanceOverflow
    case notSignedIn
    case signedOut
    case notShared
    case alreadyShared
    case ownerOnly
    case busy(String)
    case keepLocalLedger(children: Int, transactions: Int)
    case invitationNotFound(String)
    /// The invitation was withdrawn or declined while the join ran; the device is as before.
    case invitationWithdrawn
    case importNeedsEmptyStore
    case invalidExport(String)
    case offline(String)
    case server(APIError)
    case storage(String)

    var description: String {
        switch self {
        case .childNotFound(let c): return "no child named or with id '\(c)'"
        case .ambiguousChild(let c): return "more than one child is named '\(c)'; use the child's id"
        case .transactionNotFound(let t): return "no transaction with id '\(t)'"
        case .invalid(let field, let message): return "\(field) \(message)"
        case .frozen(let reason): return "shared editing is frozen: \(reason.explanation) \(reason.suggestion)"
        case .nothingToUndo(let name): return "\(name) has nothing to undo"
        case .notReversible: return "a reversal cannot be undone"
        case .balanceOverflow: return "that would take the balance beyond what can be stored"
        case .notSignedIn: return "not signed in; run `kidledger signup` or `kidledger login --token T`"
        case .signedOut: return "the server no longer accepts this device's token; run `kidledger login --token T`"
        case .notShared: return "this ledger is not shared"
        case .alreadyShared: return "this ledger is already shared"
        case .ownerOnly: return "only the household's owner can do that"
        case .busy(let what): return what
        case .keepLocalLedger(let c, let t):
            return "this device holds a different ledger (\(ClientError.count(c, "child", "children")), \(ClientError.count(t, "transaction", "transactions"))); keeping it. Use --replace-local to export it and join anyway"
        case .invitationNotFound(let id): return "no pending invitation '\(id)'; run `kidledger invitations` to list them"
        case .invitationWithdrawn: return "the invitation is no longer valid (withdrawn, declined or access revoked); this device's ledger was left as it was"
        case .importNeedsEmptyStore: return "import needs an empty, local-only store"
        case .invalidExport(let why): return "not a kidledger export: \(why)"
        case .offline(let why): return "offline: \(why)"
        case .server(let e): return e.description
        case .storage(let why): return "storage error: \(why)"
        }
    }

    static func count(_ n: Int, _ one: String, _ many: String) -> String { "\(n) \(n == 1 ? one : many)" }
}
