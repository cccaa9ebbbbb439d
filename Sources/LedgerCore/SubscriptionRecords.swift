import LedgerModel

/// A household's registered App Store subscription: who registered it, when, and the
/// purchase's newest event (which may be newer than the upload that registered it).
package struct SubscriptionRecord: Sendable, Equatable {
    package var grantedBy: String
    package var verifiedAt: Int64
    package var purchase: StoredPurchase

    @usableFromInline package init(grantedBy: String, verifiedAt: Int64, purchase: StoredPurchase) {
        (self.grantedBy, self.verifiedAt, self.purchase) = (grantedBy, verifiedAt, purchase)
    }
}

/// A verified App Store Server Notification as remembered, so a replay changes nothing.
package struct NotificationRecord: Sendable, Equatable {
    /// `notificationUUID`.
    package var uuid: String
    package var type: String
    package var subtype: String?
    package var originalTransactionId: String?
    /// The notification's `signedDate` (ms).
    package var signedDate: Int64

    @usableFromInline package init(uuid: String, type: String, subtype: String? = nil, originalTransactionId: String? = nil,
                 signedDate: Int64) {
        (self.uuid, self.type, self.subtype, self.originalTransactionId) = (uuid, type, subtype, originalTransactionId)
        self.signedDate = signedDate
    }

    /// How long verified notifications, and purchases no household registered, are kept.
    package static let retentionMs: Int64 = 90 * 24 * 3600 * 1000
}

/// What became of a verified notification.
package enum NotificationOutcome: String, Sendable, Equatable {
    /// The purchase's state changed for the households that registered it.
    case applied
    /// No household registered the purchase yet: kept, and applied when one does.
    case unmatched
    /// The purchase already has a newer event.
    case stale
    /// Its UUID was seen before.
    case duplicate
    /// A type that changes no entitlement.
    case ignored
}

/// Whether a purchase event replaced the stored one.
package enum PurchaseEventResult: Sendable, Equatable {
    case applied
    /// The stored event is not older: nothing changed.
    case stale
}
