import Foundation

/// The decoded payload of an App Store signed transaction (`JWSTransactionDecodedPayload`).
///
/// Field names and JSON types follow Apple's App Store Server API; every field is optional
/// as in Apple's model. Dates are exchanged as integer milliseconds since 1970 in JSON
/// (decoding and encoding) and exposed as `Date`. Enumerated values (`type`,
/// `environment`, `inAppOwnershipType`, …) stay strings so unknown future values decode.
public struct JWSTransactionDecodedPayload: Codable, Equatable, Sendable {
    /// The identifier of the original purchase (stable across renewals).
    public var originalTransactionId: String?
    /// The identifier of this transaction.
    public var transactionId: String?
    /// The identifier of subscription purchase events across devices.
    public var webOrderLineItemId: String?
    /// The app's bundle identifier.
    public var bundleId: String?
    /// The in-app purchase product identifier.
    public var productId: String?
    /// The subscription group the product belongs to.
    public var subscriptionGroupIdentifier: String?
    /// When the App Store charged for this transaction.
    public var purchaseDate: Date?
    /// The purchase date of the original transaction.
    public var originalPurchaseDate: Date?
    /// When the subscription expires or renews.
    public var expiresDate: Date?
    /// The number of consumable products purchased.
    public var quantity: Int?
    /// The product type, e.g. `Auto-Renewable Subscription`.
    public var type: String?
    /// The UUID the app attached to the purchase; here the owner's account id.
    public var appAccountToken: String?
    /// `PURCHASED` or `FAMILY_SHARED`.
    public var inAppOwnershipType: String?
    /// When the App Store signed this JWS.
    public var signedDate: Date?
    /// Why the transaction was refunded or revoked (0 other, 1 app issue).
    public var revocationReason: Int?
    /// When the transaction was refunded or revoked.
    public var revocationDate: Date?
    /// Whether the user upgraded to another subscription.
    public var isUpgraded: Bool?
    /// The promotional offer type (1 introductory, 2 promotional, 3 offer code, 4 win-back).
    public var offerType: Int?
    /// The offer code or promotional offer identifier.
    public var offerIdentifier: String?
    /// `Production`, `Sandbox`, `Xcode` or `LocalTesting`.
    public var environment: String?
    /// The three-letter code of the App Store storefront.
    public var storefront: String?
    /// Apple's storefront identifier.
    public var storefrontId: String?
    /// `PURCHASE` or `RENEWAL`.
    public var transactionReason: String?
    /// The price in milliunits of ``currency``.
    public var price: Int64?
    /// ISO 4217 currency code of ``price``.
    public var currency: String?
    /// The payment mode of a discount offer (`FREE_TRIAL`, `PAY_AS_YOU_GO`, `PAY_UP_FRONT`).
    public var offerDiscountType: String?

    /// Creates a payload; every field defaults to absent.
    public init(originalTransactionId: String? = nil, transactionId: String? = nil,
                webOrderLineItemId: String? = nil, bundleId: String? = nil, productId: String? = nil,
                subscriptionGroupIdentifier: String? = nil, purchaseDate: Date? = nil,
                originalPurchaseDate: Date? = nil, expiresDate: Date? = nil, quantity: Int? = nil,
                type: String? = nil, appAccountToken: String? = nil, inAppOwnershipType: String? = nil,
                signedDate: Date? = nil, revocationReason: Int? = nil, revocationDate: Date? = nil,
                isUpgraded: Bool? = nil, offerType: Int? = nil, offerIdentifier: String? = nil,
                environment: String? = nil, storefront: String? = nil, storefrontId: String? = nil,
                transactionReason: String? = nil, price: Int64? = nil, currency: String? = nil,
                offerDiscountType: String? = nil) {
        self.originalTransactionId = originalTransactionId
        self.transactionId = transactionId
        self.webOrderLineItemId = webOrderLineItemId
        self.bundleId = bundleId
        self.productId = productId
        self.subscriptionGroupIdentifier = subscriptionGroupIdentifier
        self.purchaseDate = purchaseDate
        self.originalPurchaseDate = originalPurchaseDate
        self.expiresDate = expiresDate
        self.quantity = quantity
        self.type = type
        self.appAccountToken = appAccountToken
        self.inAppOwnershipType = inAppOwnershipType
        self.signedDate = signedDate
        self.revocationReason = revocationReason
        self.revocationDate = revocationDate
        self.isUpgraded = isUpgraded
        self.offerType = offerType
        self.offerIdentifier = offerIdentifier
        self.environment = environment
        self.storefront = storefront
        self.storefrontId = storefrontId
        self.transactionReason = transactionReason
        self.price = price
        self.currency = currency
        self.offerDiscountType = offerDiscountType
    }

    private enum CodingKeys: String, CodingKey {
        case originalTransactionId, transactionId, webOrderLineItemId, bundleId, productId
        case subscriptionGroupIdentifier, purchaseDate, originalPurchaseDate, expiresDate, quantity
        case type, appAccountToken, inAppOwnershipType, signedDate, revocationReason, revocationDate
        case isUpgraded, offerType, offerIdentifier, environment, storefront, storefrontId
        case transactionReason, price, currency, offerDiscountType
    }

    /// Converts integer milliseconds since 1970 to a `Date`.
    public static func date(milliseconds: Int64) -> Date {
        Date(timeIntervalSince1970: Double(milliseconds) / 1000)
    }

    /// Converts a `Date` to integer milliseconds since 1970 (rounded to nearest).
    public static func milliseconds(_ date: Date) -> Int64 {
        let value = (date.timeIntervalSince1970 * 1000).rounded()
        return Int64(exactly: value) ?? (value < 0 ? Int64.min : Int64.max)
    }

    /// Decodes Apple's JSON; dates must be integer milliseconds.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        func date(_ key: CodingKeys) throws -> Date? { try c.decodeMillisecondsIfPresent(forKey: key) }
        originalTransactionId = try c.decodeIfPresent(String.self, forKey: .originalTransactionId)
        transactionId = try c.decodeIfPresent(String.self, forKey: .transactionId)
        webOrderLineItemId = try c.decodeIfPresent(String.self, forKey: .webOrderLineItemId)
        bundleId = try c.decodeIfPresent(String.self, forKey: .bundleId)
        productId = try c.decodeIfPresent(String.self, forKey: .productId)
        subscriptionGroupIdentifier = try c.decodeIfPresent(String.self, forKey: .subscriptionGroupIdentifier)
        purchaseDate = try date(.purchaseDate)
        originalPurchaseDate = try date(.originalPurchaseDate)
        expiresDate = try date(.expiresDate)
        quantity = try c.decodeIfPresent(Int.self, forKey: .quantity)
        type = try c.decodeIfPresent(String.self, forKey: .type)
        appAccountToken = try c.decodeIfPresent(String.self, forKey: .appAccountToken)
        inAppOwnershipType = try c.decodeIfPresent(String.self, forKey: .inAppOwnershipType)
        signedDate = try date(.signedDate)
        revocationReason = try c.decodeIfPresent(Int.self, forKey: .revocationReason)
        revocationDate = try date(.revocationDate)
        isUpgraded = try c.decodeIfPresent(Bool.self, forKey: .isUpgraded)
        offerType = try c.decodeIfPresent(Int.self, forKey: .offerType)
        offerIdentifier = try c.decodeIfPresent(String.self, forKey: .offerIdentifier)
        environment = try c.decodeIfPresent(String.self, forKey: .environment)
        storefront = try c.decodeIfPresent(String.self, forKey: .storefront)
        storefrontId = try c.decodeIfPresent(String.self, forKey: .storefrontId)
        transactionReason = try c.decodeIfPresent(String.self, forKey: .transactionReason)
        price = try c.decodeIfPresent(Int64.self, forKey: .price)
        currency = try c.decodeIfPresent(String.self, forKey: .currency)
        offerDiscountType = try c.decodeIfPresent(String.self, forKey: .offerDiscountType)
    }

    /// Encodes as Apple's JSON, dates as integer milliseconds, absent fields omitted.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        func date(_ value: Date?, _ key: CodingKeys) throws { try c.encodeMillisecondsIfPresent(value, forKey: key) }
        try c.encodeIfPresent(originalTransactionId, forKey: .originalTransactionId)
        try c.encodeIfPresent(transactionId, forKey: .transactionId)
        try c.encodeIfPresent(webOrderLineItemId, forKey: .webOrderLineItemId)
        try c.encodeIfPresent(bundleId, forKey: .bundleId)
        try c.encodeIfPresent(productId, forKey: .productId)
        try c.encodeIfPresent(subscriptionGroupIdentifier, forKey: .subscriptionGroupIdentifier)
        try date(purchaseDate, .purchaseDate)
        try date(originalPurchaseDate, .originalPurchaseDate)
        try date(expiresDate, .expiresDate)
        try c.encodeIfPresent(quantity, forKey: .quantity)
        try c.encodeIfPresent(type, forKey: .type)
        try c.encodeIfPresent(appAccountToken, forKey: .appAccountToken)
        try c.encodeIfPresent(inAppOwnershipType, forKey: .inAppOwnershipType)
        try date(signedDate, .signedDate)
        try c.encodeIfPresent(revocationReason, forKey: .revocationReason)
        try date(revocationDate, .revocationDate)
        try c.encodeIfPresent(isUpgraded, forKey: .isUpgraded)
        try c.encodeIfPresent(offerType, forKey: .offerType)
        try c.encodeIfPresent(offerIdentifier, forKey: .offerIdentifier)
        try c.encodeIfPresent(environment, forKey: .environment)
        try c.encodeIfPresent(storefront, forKey: .storefront)
        try c.encodeIfPresent(storefrontId, forKey: .storefrontId)
        try c.encodeIfPresent(transactionReason, forKey: .transactionReason)
        try c.encodeIfPresent(price, forKey: .price)
        try c.encodeIfPresent(currency, forKey: .currency)
        try c.encodeIfPresent(offerDiscountType, forKey: .offerDiscountType)
    }
}
