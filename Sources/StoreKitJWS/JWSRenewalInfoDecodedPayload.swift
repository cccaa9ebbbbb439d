import Foundation

/// The decoded payload of an App Store signed renewal info (`JWSRenewalInfoDecodedPayload`).
///
/// Field names and JSON types follow Apple's App Store Server API; every field is optional.
/// Dates are integer milliseconds in JSON and `Date` here.
public struct JWSRenewalInfoDecodedPayload: Codable, Equatable, Sendable, AppStoreSignedPayload {
    /// The original transaction id of the subscription this renewal info belongs to.
    public var originalTransactionId: String?
    /// The product the subscription is in now.
    public var productId: String?
    /// The product that renews next (differs after a downgrade or crossgrade).
    public var autoRenewProductId: String?
    /// 1 when the subscription renews automatically, 0 when the customer turned it off.
    public var autoRenewStatus: Int?
    /// Why the subscription expired (1 cancelled, 2 billing error, 3 price increase, 4 unavailable, 5 other).
    public var expirationIntent: Int?
    /// Whether the App Store is still trying to charge for a renewal.
    public var isInBillingRetryPeriod: Bool?
    /// When the billing grace period ends; service continues until then.
    public var gracePeriodExpiresDate: Date?
    /// Status of a price increase consent (0 not yet, 1 consented or not needed).
    public var priceIncreaseStatus: Int?
    /// The offer type of the next renewal.
    public var offerType: Int?
    /// The offer identifier of the next renewal.
    public var offerIdentifier: String?
    /// When the App Store signed this JWS.
    public var signedDate: Date?
    /// `Production`, `Sandbox`, `Xcode` or `LocalTesting`.
    public var environment: String?
    /// The start of the last continuous run of subscription periods.
    public var recentSubscriptionStartDate: Date?
    /// When the next renewal takes place.
    public var renewalDate: Date?
    /// The UUID the app attached to the purchase; here the owner's account id.
    public var appAccountToken: String?

    public static var kind: String { "renewal info" }

    /// Creates a payload; every field defaults to absent.
    public init(originalTransactionId: String? = nil, productId: String? = nil, autoRenewProductId: String? = nil,
                autoRenewStatus: Int? = nil, expirationIntent: Int? = nil, isInBillingRetryPeriod: Bool? = nil,
                gracePeriodExpiresDate: Date? = nil, priceIncreaseStatus: Int? = nil, offerType: Int? = nil,
                offerIdentifier: String? = nil, signedDate: Date? = nil, environment: String? = nil,
                recentSubscriptionStartDate: Date? = nil, renewalDate: Date? = nil, appAccountToken: String? = nil) {
        self.originalTransactionId = originalTransactionId
        self.productId = productId
        self.autoRenewProductId = autoRenewProductId
        self.autoRenewStatus = autoRenewStatus
        self.expirationIntent = expirationIntent
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.priceIncreaseStatus = priceIncreaseStatus
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.signedDate = signedDate
        self.environment = environment
        self.recentSubscriptionStartDate = recentSubscriptionStartDate
        self.renewalDate = renewalDate
        self.appAccountToken = appAccountToken
    }

    private enum CodingKeys: String, CodingKey {
        case originalTransactionId, productId, autoRenewProductId, autoRenewStatus, expirationIntent
        case isInBillingRetryPeriod, gracePeriodExpiresDate, priceIncreaseStatus, offerType, offerIdentifier
        case signedDate, environment, recentSubscriptionStartDate, renewalDate, appAccountToken
    }

    /// Decodes Apple's JSON; dates must be integer milliseconds.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        originalTransactionId = try c.decodeIfPresent(String.self, forKey: .originalTransactionId)
        productId = try c.decodeIfPresent(String.self, forKey: .productId)
        autoRenewProductId = try c.decodeIfPresent(String.self, forKey: .autoRenewProductId)
        autoRenewStatus = try c.decodeIfPresent(Int.self, forKey: .autoRenewStatus)
        expirationIntent = try c.decodeIfPresent(Int.self, forKey: .expirationIntent)
        isInBillingRetryPeriod = try c.decodeIfPresent(Bool.self, forKey: .isInBillingRetryPeriod)
        gracePeriodExpiresDate = try c.decodeMillisecondsIfPresent(forKey: .gracePeriodExpiresDate)
        priceIncreaseStatus = try c.decodeIfPresent(Int.self, forKey: .priceIncreaseStatus)
        offerType = try c.decodeIfPresent(Int.self, forKey: .offerType)
        offerIdentifier = try c.decodeIfPresent(String.self, forKey: .offerIdentifier)
        signedDate = try c.decodeMillisecondsIfPresent(forKey: .signedDate)
        environment = try c.decodeIfPresent(String.self, forKey: .environment)
        recentSubscriptionStartDate = try c.decodeMillisecondsIfPresent(forKey: .recentSubscriptionStartDate)
        renewalDate = try c.decodeMillisecondsIfPresent(forKey: .renewalDate)
        appAccountToken = try c.decodeIfPresent(String.self, forKey: .appAccountToken)
    }

    /// Encodes as Apple's JSON, dates as integer milliseconds, absent fields omitted.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encodeIfPresent(originalTransactionId, forKey: .originalTransactionId)
        try c.encodeIfPresent(productId, forKey: .productId)
        try c.encodeIfPresent(autoRenewProductId, forKey: .autoRenewProductId)
        try c.encodeIfPresent(autoRenewStatus, forKey: .autoRenewStatus)
        try c.encodeIfPresent(expirationIntent, forKey: .expirationIntent)
        try c.encodeIfPresent(isInBillingRetryPeriod, forKey: .isInBillingRetryPeriod)
        try c.encodeMillisecondsIfPresent(gracePeriodExpiresDate, forKey: .gracePeriodExpiresDate)
        try c.encodeIfPresent(priceIncreaseStatus, forKey: .priceIncreaseStatus)
        try c.encodeIfPresent(offerType, forKey: .offerType)
        try c.encodeIfPresent(offerIdentifier, forKey: .offerIdentifier)
        try c.encodeMillisecondsIfPresent(signedDate, forKey: .signedDate)
        try c.encodeIfPresent(environment, forKey: .environment)
        try c.encodeMillisecondsIfPresent(recentSubscriptionStartDate, forKey: .recentSubscriptionStartDate)
        try c.encodeMillisecondsIfPresent(renewalDate, forKey: .renewalDate)
        try c.encodeIfPresent(appAccountToken, forKey: .appAccountToken)
    }
}
