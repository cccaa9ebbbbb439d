import Foundation

extension LedgerError {
    /// The public form of any error the internals throw.
    init(_ error: any Error) {
        switch error {
        case let e as LedgerError: self = e
        case let e as ClientError: self = LedgerError(e)
        case let e as APIError: self = LedgerError(e)
        case let e as StoreFailure: self = .store(underlying: e.underlying)
        case let e as UploadIncomplete:
            self = .notAllowed(reason: "Sharing is not finished: \(e.pending) \(e.pending == 1 ? "change waits" : "changes wait") to be uploaded. It continues with the next sync.")
        case is CancellationError: self = .cancelled
        case let e as CocoaError where e.isFileError: self = .store(underlying: e)
        default: self = .store(underlying: error)
        }
    }

    init(_ error: APIError) {
        switch error {
        case .transport(let t):
            self = t == .cancelled ? .cancelled : .offline
        case .problem(let status, let code, let detail, _, let members):
            // The identity endpoints' own answers (API.md v1.2), before what their status says in general.
            switch code {
            case "identity_not_linked": self = .identityNotLinked; return
            case "invalid_id_token": self = .invalidIdentityToken(reason: members.reason ?? ""); return
            case "link_code_invalid": self = .linkCodeInvalid; return
            case "recovery_failed": self = .recoveryFailed; return
            case "owner_of_shared_household":
                self = .ownerOfSharedHousehold((members.households ?? []).map { $0.lowercased() }); return
            case "confirmation_mismatch":
                self = .invalidInput(field: "handle", message: "does not match the signed-in account's handle"); return
            default: break
            }
            if status == 401 { self = .unauthenticated; return }
            if status >= 500 || status == 429 || status == 408 { self = .offline; return }
            self = .server(code: code, status: status, detail: detail ?? "")
        case .invalidAnswer(let why):
            self = .server(code: "invalid_answer", status: 0, detail: why)
        }
    }

    init(_ error: ClientError) {
        switch error {
        case .childNotFound, .transactionNotFound, .scheduleNotFound, .potNotFound, .requestNotFound, .invitationNotFound, .invitationWithdrawn, .householdNotFound: self = .notFound
        case .requestDecided(let status): self = .notAllowed(reason: "This request was \(status) already.")
        case .childDevice: self = .notAllowed(reason: LedgerError.childDeviceReason)
        case .parentsOnly: self = .notAllowed(reason: "Only a parent's device can do that.")
        case .ambiguousChild(let name): self = .invalidInput(field: "child", message: "'\(name)' names more than one child")
        case .invalid(let field, let message):
            self = field == "amount" ? .invalidAmount : .invalidInput(field: field, message: message)
        case .balanceOverflow: self = .invalidAmount
        case .frozen(let reason): self = .attentionRequired(reason)
        case .nothingToUndo: self = .nothingToUndo
        case .notReversible: self = .notAllowed(reason: "A reversal cannot itself be undone.")
        case .notSignedIn, .signedOut: self = .unauthenticated
        case .notShared: self = .notAllowed(reason: "This ledger is not shared.")
        case .alreadyShared: self = .notAllowed(reason: "This ledger is already shared.")
        case .ownerOnly: self = .notAllowed(reason: "Only the household's owner can do that.")
        case .joinInProgress: self = .notAllowed(reason: "Joining a household is still in progress; it finishes with the next sync.")
        case .ownerCannotLeave: self = .notAllowed(reason: "You own this household; stop sharing it instead of leaving it.")
        case .keepLocalLedger: self = .joinWouldReplaceLocalLedger
        case .importNeedsEmptyStore: self = .notAllowed(reason: "A ledger can only be imported into an empty ledger that was never shared.")
        case .invalidExport(let why): self = .invalidInput(field: "file", message: "is not a ledger export (\(why))")
        case .offline: self = .offline
        case .server(let e): self = LedgerError(e)
        case .storage(let why): self = .store(underlying: StorageFailure(message: why))
        }
    }
}

/// A storage failure described only by a message.
struct StorageFailure: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}

/// Runs `body`, rethrowing any failure as a `LedgerError`.
func publicErrors<T>(_ body: () throws -> T) throws(LedgerError) -> T {
    do { return try body() } catch { throw LedgerError(error) }
}
