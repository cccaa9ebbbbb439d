import LedgerModel

/// A household's registered App Store subscription: who registered it, when, and the
/// purchase's newest event (which may be newer than the upload that registered it).
struct SubscriptionRecord: Sendable, Equatable {
    var grantedBy: String
    var verifiedAt: Int64
    var purchase: StoredPurchase
}

/// A verified App Store Server Notification as remembered, so a replay changes nothing.
struct NotificationRecord: Sendable, Equatable {
    /// `notificationUUID`.
    var uuid: String
    var type: String
    var subtype: String?
    var originalTransactionId: String?
    /// The notification's `signedDate` (ms).
    var signedDate: Int64

    /// How long verified notifications, and purchases no household registered, are kept.
    static let retentionMs: Int64 = 90 * 24 * 3600 * 1000
}

/// What became of a verified notification.
enum NotificationOutcome: String, Sendable, Equatable {
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
enum PurchaseEventResult: Sendable, Equatable {
    case applied
    /// The stored event is not older: nothing changed.
    case stale
}
