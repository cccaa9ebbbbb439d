/// What a sync did that an app should hear about, in the order it happened. The engine hands
/// each one to `SyncEngine.onEvent` after the local transaction that made it durable committed.
enum SyncEvent: Sendable, Equatable {
    /// Remote records merged into the replica by one pull.
    case remoteChanges(children: Int, transactions: Int)
    /// The server refused a local change for good; it is kept as a rejected change until dismissed.
    case rejected(RejectedRecord)
    /// Pulled records that could not be merged were set aside (see `LedgerStore.unmergedChanges()`);
    /// the rest of their page was merged and later pages keep coming.
    case unmerged(count: Int, reason: String)
}

/// Enabling sharing pushed what it could, but records are still queued (shared editing is frozen,
/// or the server kept answering without taking them): the ledger is not marked as uploaded.
struct UploadIncomplete: Error, CustomStringConvertible {
    /// Records still waiting to be pushed.
    let pending: Int

    var description: String {
        "sharing is not finished: \(pending) \(pending == 1 ? "record is" : "records are") still waiting to be uploaded"
    }
}
