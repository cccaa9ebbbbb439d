import LedgerModel

/// The App Store rules, written once over the subscription primitives of `LedgerWriting`.
///
/// A purchase is keyed by (environment, originalTransactionId) (`PurchaseKey`): a Sandbox
/// event never touches a Production purchase, nor the reverse. A purchase keeps only its
/// newest event, ordered by `(signedDate, key)` whatever the arrival order
/// (`applyPurchaseEvent`); a notification's UUID is remembered so a replay changes nothing; a purchase no household registered is kept for 90 days
/// (`NotificationRecord.retentionMs`) and applies when an owner registers it (the upload is
/// then just one more event, stale when the kept one is newer). The state a purchase grants
/// is derived at request time (`PurchaseState.derive`).
///
/// Lock order (where writes lock rows, PostgreSQL): a write that takes both a purchase's row
/// and households' rows takes the purchase's first. A notification reads the purchase
/// (`FOR UPDATE`) and then advances the feed of every household subscribed to it; an upload
/// reads the purchase before anything of its household. Were the upload to lock its
/// household first, it could wait for the purchase while a notification held the purchase
/// and waited for that household: a deadlock the database finds only after its
/// `deadlock_timeout`, and a write run again.
extension LedgerWriting {
    /// Stores `e` as its purchase's newest event unless the stored one is not older.
    package func applyPurchaseEvent(_ e: PurchaseEvent, now: Int64) throws -> PurchaseEventResult {
        try applyPurchaseEvent(e, over: purchase(e.purchaseKey), now: now)
    }

    /// `applyPurchaseEvent` over `stored`, the purchase as this write read it (and locked).
    private func applyPurchaseEvent(_ e: PurchaseEvent, over stored: StoredPurchase?, now: Int64) throws -> PurchaseEventResult {
        if let stored {
            guard e.isNewer(than: stored.event) else { return .stale }
            try updatePurchase(e, at: now)
        } else {
            try insertPurchase(e, at: now)
        }
        return .applied
    }

    /// `PUT …/subscription` by the owner: registers the uploaded purchase for the household
    /// and applies the upload as an event. The household gets the purchase's newest state,
    /// which is a kept notification's when that is newer (an old upload cannot undo a refund).
    package func registerSubscription(household: String, owner: String, upload: PurchaseEvent, now: Int64) throws -> SubscriptionRecord {
        // The purchase first, then the household (the lock order above).
        let stored = try purchase(upload.purchaseKey)
        let m = try membership(household: household, account: owner, need: .owner)
        try setSubscription(household: household, upload: upload, grantedBy: m.ownerAccountId, at: now)
        _ = try applyPurchaseEvent(upload, over: stored, now: now)
        _ = try nextSeq(household: household)
        guard let r = try subscription(household: household) else { throw LedgerStorageError.noSubscription }
        return r
    }

    /// `DELETE …/subscription` (the caller checked the owner): the household's feed moves
    /// only when there was one.
    package func removeSubscription(household: String) throws {
        if try deleteSubscription(household: household) { _ = try nextSeq(household: household) }
    }

    /// Records a verified notification and applies its event (nil: a type that changes no
    /// entitlement). Households whose entitlement changed are touched (their long-polls
    /// wake). Old notifications and unregistered purchases past the retention are forgotten.
    package func recordNotification(_ n: NotificationRecord, event: PurchaseEvent?, now: Int64) throws -> NotificationOutcome {
        if try notificationSeen(uuid: n.uuid) { return .duplicate }
        let cutoff = now - NotificationRecord.retentionMs
        try deleteNotifications(receivedBefore: cutoff)
        try deleteUnregisteredPurchases(updatedBefore: cutoff)
        var outcome = NotificationOutcome.ignored
        if let event {
            switch try applyPurchaseEvent(event, now: now) {
            case .stale:
                outcome = .stale
            case .applied:
                var touched = 0
                for h in try households(subscribedTo: event.purchaseKey) {
                    // A household another process deleted since the list was read needs nothing.
                    do { _ = try nextSeq(household: h); touched += 1 } catch LedgerStorageError.householdNotFound { continue }
                }
                outcome = touched == 0 ? .unmatched : .applied
            }
        }
        try insertNotification(n, outcome: outcome, at: now)
        return outcome
    }
}
