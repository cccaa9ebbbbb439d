import Foundation

extension Ledger {
    /// The owner's "restore from this device", after the server went back in time (a restore
    /// or a failover; `SyncStatus.reconciling` with records `waiting`): pushes back every
    /// record this device holds that the server lacks, other members' too. Those keep their
    /// authors, and the server marks them as restored by the owner. Use it when a member's
    /// device will not come back (the member left, or lost the phone); otherwise each device
    /// brings back its own records by itself. Only the household's owner may run it.
    @discardableResult
    public func restoreServerFromThisDevice() async throws -> SyncReport {
        _ = try ownedSharedHousehold()
        _ = try await flow { engine in try engine.beginOwnerRestore() }
        return try await syncNow()
    }
}
