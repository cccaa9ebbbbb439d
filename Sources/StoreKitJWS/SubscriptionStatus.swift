import Foundation

/// The entitlement a verified, policy-conforming transaction grants at a point in time.
public struct SubscriptionStatus: Sendable, Equatable {
    /// Whether the subscription is in force (`expiresDate` absent or later than now).
    public var active: Bool
    /// The product purchased.
    public var productId: String
    /// The original transaction id (falls back to `transactionId`, then empty).
    public var originalTransactionId: String
    /// When the subscription expires, if it does.
    public var expiresAt: Date?
    /// The App Store environment the purchase was made in.
    public var environment: String

    /// Creates a status value.
    public init(active: Bool, productId: String, originalTransactionId: String, expiresAt: Date?, environment: String) {
        self.active = active
        self.productId = productId
        self.originalTransactionId = originalTransactionId
        self.expiresAt = expiresAt
        self.environment = environment
    }

    /// `"active"` or `"expired"`, the wire value of the API's `status`.
    public var status: String { active ? "active" : "expired" }
}
