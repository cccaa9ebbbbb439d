/// What the last sync attempt said about the server, when it said something the status shows
/// (persisted; none after a success or an answer that only concerned one call).
enum SyncOutcome: String, Sendable, Equatable {
    /// The server could not be reached.
    case offline
    /// The server no longer accepts this device's token.
    case unauthenticated
}
