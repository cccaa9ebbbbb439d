import LedgerClient

/// A failure the command line itself reports (one line, exit status 1).
struct CLIError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// The command line's words for the SDK's errors: what happened, then which command helps.
enum Wording {
    static func describe(_ error: LedgerError) -> String {
        switch error {
        case .offline:
            return "offline: the server cannot be reached; changes are kept on this device and uploaded by `kidledger sync`"
        case .unauthenticated:
            return "not signed in, or the server no longer accepts this device's token; run `kidledger signup`, `kidledger login --token T`, `kidledger redeem CODE` or `kidledger recover`"
        case .attentionRequired(let reason):
            return "shared editing is frozen: \(lowered(reason.explanation)); \(remedy(reason))"
        case .notFound:
            return "not found"
        case .invalidAmount:
            return "amount must be more than zero and at most 1000000000.00"
        case .nothingToUndo:
            return "nothing to undo"
        case .joinWouldReplaceLocalLedger:
            return "this device holds a different ledger; keeping it. Use --replace-local to export it and join anyway"
        case .invalidInput(let field, let message):
            return "\(field) \(message)"
        case .notAllowed(let reason):
            return lowered(reason)
        case .store(let underlying):
            return "storage error: \(underlying)"
        case .server(let code, let status, let detail):
            return "server refused (\(status) \(code))" + (detail.isEmpty ? "" : ": \(detail)")
        case .cancelled:
            return "cancelled"
        case .identityNotLinked:
            return "this sign-in is linked to no account; pass --handle H --name N to create one, or sign in another way and link it"
        case .invalidIdentityToken(let reason):
            return "the identity token was refused (\(reason.isEmpty ? "invalid" : reason)); get a new one from the provider and sign in again"
        case .linkCodeInvalid:
            return "that link code is not valid (mistyped, used or expired); make a new one with `kidledger link` on a signed-in device"
        case .recoveryFailed:
            return "that handle and recovery code do not open an account; check both (each code works once)"
        case .ownerOfSharedHousehold(let ids):
            return "this account owns \(Output.count(ids.count, "shared household", "shared households")) (\(ids.joined(separator: ", "))); hand each over with `kidledger owner transfer HANDLE` on a device that holds it, or pass --delete-shared to delete them for everyone"
        }
    }

    /// What to run about a frozen ledger.
    static func remedy(_ reason: AttentionReason) -> String {
        switch reason {
        case .accessRevoked: return "ask the owner to invite you again, or run `kidledger leave` to keep this copy as a local ledger"
        case .readOnly: return "ask the owner for read-write access"
        case .householdDeleted: return "run `kidledger leave` to keep this copy as a local ledger"
        case .accountChanged:
            return "go back to this ledger's account (`kidledger login --pinned`), or join another household with `kidledger join ID --replace-local`"
        case .unreadableChanges: return "update kidledger; your own changes are kept and keep syncing"
        }
    }

    /// A sentence as a clause: first letter lowercased, final period dropped.
    static func lowered(_ sentence: String) -> String {
        var s = sentence
        if s.hasSuffix(".") { s.removeLast() }
        guard let first = s.first else { return s }
        return first.lowercased() + s.dropFirst()
    }
}
