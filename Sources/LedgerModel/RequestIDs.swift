import Foundation

/// The deterministic id of what a child's request pays when a parent approves it.
public enum RequestIDs {
    /// The payment of approved request `requestId`: UUIDv5(N, "request:" + requestId), so two
    /// parents approving at once, online or offline, write one transaction.
    public static func payment(requestId: UUID, sha1: SHA1.Function = .portable) -> UUID {
        UUIDv5.make(namespace: LedgerIDs.namespace, nameMaxCount: 8 + 36, sha1: sha1) { w in
            w.put(literal: "request:")
            w.putLowercased(requestId)
        }
    }
}
