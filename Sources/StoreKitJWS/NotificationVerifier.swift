import Foundation

/// A notification whose outer and nested JWS all verified and whose app, environment and
/// purchase checks passed.
public struct VerifiedNotification: Sendable, Equatable {
    /// The outer payload.
    public var notification: ResponseBodyV2DecodedPayload
    /// `notificationUUID`, lowercased.
    public var uuid: String
    /// `notificationType`.
    public var type: String
    /// The environment shared by the notification and its nested JWS.
    public var environment: String
    /// The verified `data.signedTransactionInfo`, when the notification has one.
    public var transaction: JWSTransactionDecodedPayload?
    /// The verified `data.signedRenewalInfo`, when the notification has one.
    public var renewalInfo: JWSRenewalInfoDecodedPayload?
}

/// Verifies App Store Server Notifications V2 (`signedPayload`), never skipping a check
/// for any environment:
/// 1. the outer JWS (``JWSVerifier``: chain at its own `signedDate`, ES256), with
///    `notificationUUID`, `notificationType` and `data` or `summary` → `malformed`;
/// 2. `bundleId` → `wrongBundle`; `environment` allowed → `wrongEnvironment`;
///    `appAppleId` (see ``SubscriptionPolicy/checkAppAppleId(_:environment:)``) → `wrongAppAppleId`;
/// 3. `data.signedTransactionInfo`, verified at its own `signedDate`, with the same `bundleId`
///    and `environment`;
/// 4. `data.signedRenewalInfo`, verified at its own `signedDate`, with the same `environment`
///    and `originalTransactionId` (see ``SubscriptionPolicy/checkRenewal(_:of:ownerAccountId:)``).
///
/// Which products grant Pro is the caller's decision (it depends on the notification type).
public struct NotificationVerifier: Sendable {
    public let verifier: JWSVerifier
    public let policy: SubscriptionPolicy

    public init(verifier: JWSVerifier, policy: SubscriptionPolicy) {
        self.verifier = verifier
        self.policy = policy
    }

    /// - Throws: ``JWSError`` or ``PolicyError``.
    public func verify(_ signedPayload: String) throws -> VerifiedNotification {
        let outer = try verifier.verify(signedPayload, as: ResponseBodyV2DecodedPayload.self)
        guard let uuid = outer.notificationUUID, !uuid.isEmpty, uuid.utf8.count <= 64 else {
            throw JWSError.malformed("notification has no notificationUUID")
        }
        guard let type = outer.notificationType, !type.isEmpty else {
            throw JWSError.malformed("notification has no notificationType")
        }
        let app: (bundleId: String?, environment: String?, appAppleId: Int64?)
        if let data = outer.data {
            app = (data.bundleId, data.environment, data.appAppleId)
        } else if let summary = outer.summary {
            app = (summary.bundleId, summary.environment, summary.appAppleId)
        } else {
            throw JWSError.malformed("notification has neither data nor summary")
        }
        guard app.bundleId == policy.bundleId else { throw PolicyError.wrongBundle }
        let environment = try policy.checkEnvironment(app.environment)
        try policy.checkAppAppleId(app.appAppleId, environment: environment)

        var transaction: JWSTransactionDecodedPayload?
        if let signed = outer.data?.signedTransactionInfo {
            let t = try verifier.verifyTransaction(signed)
            guard t.bundleId == policy.bundleId else { throw PolicyError.wrongBundle }
            guard t.environment == environment else { throw PolicyError.wrongEnvironment }
            transaction = t
        }
        var renewal: JWSRenewalInfoDecodedPayload?
        if let signed = outer.data?.signedRenewalInfo {
            let r = try verifier.verify(signed, as: JWSRenewalInfoDecodedPayload.self)
            guard r.environment == environment else { throw PolicyError.wrongEnvironment }
            if let transaction { try policy.checkRenewal(r, of: transaction, ownerAccountId: nil) }
            renewal = r
        }
        return VerifiedNotification(notification: outer, uuid: uuid.lowercased(), type: type, environment: environment,
                                    transaction: transaction, renewalInfo: renewal)
    }
}
