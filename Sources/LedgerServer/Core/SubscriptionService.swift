/// Verifies App Store JWS for the subscription endpoints (configured by bundle id).
final class SubscriptionService: Sendable {
    static func make(_ configuration: LedgerAppConfiguration) throws -> SubscriptionService? {
        nil
    }
}
