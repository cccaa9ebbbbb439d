/// Why an operation of the internals failed; `Ledger` turns each into a `LedgerError` (whose
/// messages are for app users) and the CLI words them its own way.
enum ClientError: Error, Equatable, Sendable {
    case childNotFound(String)
    case ambiguousChild(String)
    case transactionNotFound(String)
    case scheduleNotFound(String)
    case potNotFound(String)
    case requestNotFound(String)
    /// The request was decided already (`approved` or `declined`) and differently.
    case requestDecided(String)
    /// This device is paired to a child: it offers only that child's calls.
    case childDevice
    /// Only a device paired to a child (or a parent's, for the parents' calls) may do that.
    case parentsOnly
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
    /// A join is being completed (the next sync finishes it); edits wait.
    case joinInProgress
    /// The owner cannot leave a household that still exists; stopping sharing is the way out.
    case ownerCannotLeave
    case keepLocalLedger(children: Int, transactions: Int)
    case invitationNotFound(String)
    /// The invitation was withdrawn or declined while the join ran; the device is as before.
    case invitationWithdrawn
    /// No household with this id among those the signed-in account owns or has joined.
    case householdNotFound(String)
    case importNeedsEmptyStore
    case invalidExport(String)
    case offline(String)
    case server(APIError)
    case storage(String)
}
