import Foundation
import LedgerCore
import LedgerModel
import StoreKitJWS

/// Verifies App Store JWS for the subscription endpoints and the notification endpoint;
/// exists only when a bundle id is configured. The trust anchors are the configured roots,
/// or Apple Root CA - G3.
final class SubscriptionService: Sendable {
    let verifier: JWSVerifier
    let policy: SubscriptionPolicy
    let notifications: NotificationVerifier

    init(verifier: JWSVerifier, policy: SubscriptionPolicy) {
        self.verifier = verifier
        self.policy = policy
        self.notifications = NotificationVerifier(verifier: verifier, policy: policy)
    }

    /// A configuration the server refuses to start with.
    struct ConfigurationError: Error, CustomStringConvertible {
        var description: String
    }

    static func make(_ configuration: LedgerAppConfiguration) throws -> SubscriptionService? {
        guard let bundleId = configuration.bundleId, !bundleId.isEmpty else { return nil }
        if configuration.environments.contains("Production") && configuration.appAppleId == nil {
            throw ConfigurationError(description: "accepting Production purchases needs the app's Apple id "
                                     + "(--app-apple-id or KIDLEDGER_APP_APPLE_ID), which App Store notifications carry")
        }
        let roots = try configuration.trustedRootPaths.isEmpty
            ? [TrustedRoot(der: AppleRootCAG3.der)]
            : configuration.trustedRootPaths.map { try TrustedRoot.load(path: $0) }
        return SubscriptionService(verifier: JWSVerifier(trustedRoots: roots),
                                   policy: SubscriptionPolicy(bundleId: bundleId, productIds: Set(configuration.productIds),
                                                              environments: Set(configuration.environments),
                                                              appAppleId: configuration.appAppleId))
    }

    /// Runs `body`, turning a refused JWS or purchase into 422 with the failed check's code
    /// and a detail in the API's words about `what`.
    private func refusing<T>(_ what: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let e as JWSError {
            throw APIError(422, e.code, e.problemDetail(what))
        } catch let e as PolicyError {
            throw APIError(422, e.code, e.problemDetail(what))
        }
    }

    /// Verifies an owner's signed transaction and optional renewal info (each chained at its
    /// own `signedDate`) and applies the policy for the household's owner at `now`; failures
    /// become 422 with the check's code. The upload is one more event of its purchase.
    func verifyUpload(transaction jws: String, renewalInfo renewalJWS: String?, ownerAccountId: String,
                      now: Date = Date()) throws -> PurchaseEvent {
        let (payload, status) = try refusing("signed transaction") {
            let payload = try verifier.verifyTransaction(jws)
            return (payload, try policy.evaluate(payload, ownerAccountId: ownerAccountId, now: now))
        }
        let renewal = try renewalJWS.map { renewalJWS in
            try refusing("signed renewal info") {
                let r = try verifier.verify(renewalJWS, as: JWSRenewalInfoDecodedPayload.self)
                try policy.checkRenewal(r, of: payload, ownerAccountId: ownerAccountId)
                return r
            }
        }
        let signed = [payload.signedDate, renewal?.signedDate].compactMap { $0 }.max()
        return PurchaseEvent(transaction: payload, renewal: renewal, environment: status.environment,
                             productId: status.productId,
                             signedDate: signed.map(JWSTransactionDecodedPayload.milliseconds) ?? 0,
                             key: "", source: "upload", signedTransaction: jws, signedRenewalInfo: renewalJWS)
    }

    /// The notification types that change an entitlement; every other type (`TEST`,
    /// `CONSUMPTION_REQUEST`, `PRICE_INCREASE`, `REFUND_DECLINED`, …) is recorded and ignored.
    static let entitlementTypes: Set<String> = [
        "SUBSCRIBED", "DID_RENEW", "DID_FAIL_TO_RENEW", "GRACE_PERIOD_EXPIRED", "EXPIRED", "REFUND",
        "REFUND_REVERSED", "REVOKE", "DID_CHANGE_RENEWAL_STATUS", "DID_CHANGE_RENEWAL_PREF",
        "OFFER_REDEEMED", "RENEWAL_EXTENDED",
    ]

    /// A verified notification, and the purchase event it carries when its type changes an entitlement.
    struct Notification {
        var verified: VerifiedNotification
        var event: PurchaseEvent?

        /// What is remembered of it (a replay of the same UUID changes nothing).
        var record: NotificationRecord {
            NotificationRecord(uuid: verified.uuid, type: verified.type, subtype: verified.notification.subtype,
                               originalTransactionId: event?.originalTransactionId ?? verified.transaction?.originalTransactionId,
                               signedDate: verified.notification.signedDate.map(JWSTransactionDecodedPayload.milliseconds) ?? 0)
        }
    }

    /// Verifies a notification's outer and nested JWS and its app, environment and purchase
    /// checks; an entitlement-changing type must carry a transaction with a product.
    ///
    /// A product that is not configured as Pro is still the purchase's newest state (a
    /// crossgrade, an offer or a resubscription into another product of its group): it is
    /// stored like any event, and ends Pro with reason `wrong_product` as the App Store's
    /// own state does, instead of being refused while the old product's expiry runs on.
    func verifyNotification(_ signedPayload: String) throws -> Notification {
        try refusing("notification") {
            let v = try notifications.verify(signedPayload)
            guard Self.entitlementTypes.contains(v.type), let t = v.transaction, let data = v.notification.data else {
                return Notification(verified: v, event: nil)
            }
            guard let productId = t.productId, !productId.isEmpty else { throw PolicyError.wrongProduct }
            guard t.originalTransactionId ?? t.transactionId != nil else {
                throw JWSError.malformed("the transaction has no originalTransactionId")
            }
            let event = PurchaseEvent(transaction: t, renewal: v.renewalInfo, environment: v.environment, productId: productId,
                                      signedDate: JWSTransactionDecodedPayload.milliseconds(v.notification.signedDate ?? Date(timeIntervalSince1970: 0)),
                                      key: v.uuid, source: "notification", signedTransaction: data.signedTransactionInfo ?? "",
                                      signedRenewalInfo: data.signedRenewalInfo, notification: v.notification)
            return Notification(verified: v, event: event)
        }
    }

    /// Why a purchase's stored event no longer grants anything under the current
    /// configuration (`wrong_product`, `wrong_environment`), or nil.
    func configurationRefusal(_ p: PurchaseEvent) -> String? {
        if !policy.productIds.contains(p.productId) { return PolicyError.wrongProduct.code }
        if (try? policy.checkEnvironment(p.environment)) == nil { return PolicyError.wrongEnvironment.code }
        return nil
    }
}
