import Foundation

/// The decoded `signedPayload` of an App Store Server Notification V2 (`ResponseBodyV2DecodedPayload`).
///
/// Only what a subscription server acts on is decoded; unknown members are ignored and
/// enumerated values stay strings so future types decode.
public struct ResponseBodyV2DecodedPayload: Decodable, Equatable, Sendable, AppStoreSignedPayload {
    /// `SUBSCRIBED`, `DID_RENEW`, `REFUND`, `TEST`, …
    public var notificationType: String?
    /// `INITIAL_BUY`, `GRACE_PERIOD`, `UPGRADE`, …
    public var subtype: String?
    /// Unique per notification; Apple's retries of one notification carry the same value.
    public var notificationUUID: String?
    /// The notification version, `2.0`.
    public var version: String?
    /// When the App Store signed the notification.
    public var signedDate: Date?
    /// The app and purchase the notification is about (absent for summary notifications).
    public var data: NotificationData?
    /// The app a renewal-extension summary is about.
    public var summary: NotificationSummary?

    public static var kind: String { "notification" }

    /// The `data` member: the app, and the purchase as nested signed JWS.
    public struct NotificationData: Decodable, Equatable, Sendable {
        /// The app's Apple id (absent in the sandbox).
        public var appAppleId: Int64?
        /// The app's bundle id.
        public var bundleId: String?
        /// The app's build version.
        public var bundleVersion: String?
        /// `Production` or `Sandbox`.
        public var environment: String?
        /// The transaction, a signed ``JWSTransactionDecodedPayload``.
        public var signedTransactionInfo: String?
        /// The renewal info, a signed ``JWSRenewalInfoDecodedPayload``.
        public var signedRenewalInfo: String?
        /// 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked.
        public var status: Int?

        public init(appAppleId: Int64? = nil, bundleId: String? = nil, bundleVersion: String? = nil,
                    environment: String? = nil, signedTransactionInfo: String? = nil,
                    signedRenewalInfo: String? = nil, status: Int? = nil) {
            self.appAppleId = appAppleId
            self.bundleId = bundleId
            self.bundleVersion = bundleVersion
            self.environment = environment
            self.signedTransactionInfo = signedTransactionInfo
            self.signedRenewalInfo = signedRenewalInfo
            self.status = status
        }
    }

    /// The `summary` member of a `RENEWAL_EXTENSION` summary notification.
    public struct NotificationSummary: Decodable, Equatable, Sendable {
        public var appAppleId: Int64?
        public var bundleId: String?
        public var environment: String?
    }

    private enum CodingKeys: String, CodingKey {
        case notificationType, subtype, notificationUUID, version, signedDate, data, summary
    }

    /// Decodes Apple's JSON; `signedDate` must be integer milliseconds.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        notificationType = try c.decodeIfPresent(String.self, forKey: .notificationType)
        subtype = try c.decodeIfPresent(String.self, forKey: .subtype)
        notificationUUID = try c.decodeIfPresent(String.self, forKey: .notificationUUID)
        version = try c.decodeIfPresent(String.self, forKey: .version)
        signedDate = try c.decodeMillisecondsIfPresent(forKey: .signedDate)
        data = try c.decodeIfPresent(NotificationData.self, forKey: .data)
        summary = try c.decodeIfPresent(NotificationSummary.self, forKey: .summary)
    }
}
