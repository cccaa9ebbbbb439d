import Foundation

/// The business rules a verified transaction must meet to grant Pro to a household.
public struct SubscriptionPolicy: Sendable {
    /// The app's bundle id; `bundleId` must equal it exactly.
    public var bundleId: String
    /// The Pro product ids; `productId` must be one of them.
    public var productIds: Set<String>
    /// Accepted environments; ``neverAcceptedEnvironments`` are refused even if listed.
    public var environments: Set<String>
    /// The app's Apple id, which notifications name in `data.appAppleId`; needed to accept
    /// Production notifications.
    public var appAppleId: Int64?

    /// Environments whose transactions are signed locally and never grant anything.
    public static let neverAcceptedEnvironments: Set<String> = ["Xcode", "LocalTesting"]

    /// Creates a policy; by default only `Production` purchases are accepted.
    public init(bundleId: String, productIds: Set<String>, environments: Set<String> = ["Production"], appAppleId: Int64? = nil) {
        self.bundleId = bundleId
        self.productIds = productIds
        self.environments = environments
        self.appAppleId = appAppleId
    }

    /// Returns `environment` when it is allowed; otherwise throws ``PolicyError/wrongEnvironment``.
    public func checkEnvironment(_ environment: String?) throws -> String {
        guard let environment, environments.contains(environment),
              !Self.neverAcceptedEnvironments.contains(environment) else { throw PolicyError.wrongEnvironment }
        return environment
    }

    /// A notification's `appAppleId` must equal ``appAppleId``; in Production it must be
    /// present (and so must ``appAppleId``). Elsewhere it is compared only when both are known
    /// (the sandbox omits it).
    public func checkAppAppleId(_ notified: Int64?, environment: String) throws {
        if environment != "Production" && (notified == nil || appAppleId == nil) { return }
        guard let notified, let appAppleId, notified == appAppleId else { throw PolicyError.wrongAppAppleId }
    }

    /// Renewal info must belong to `transaction`: the same `originalTransactionId`
    /// (``PolicyError/renewalMismatch``) and `environment` (``PolicyError/wrongEnvironment``);
    /// with an `ownerAccountId`, an `appAccountToken` it carries must equal it
    /// (``PolicyError/accountMismatch``).
    public func checkRenewal(_ renewal: JWSRenewalInfoDecodedPayload, of transaction: JWSTransactionDecodedPayload,
                             ownerAccountId: String?) throws {
        guard renewal.environment == transaction.environment else { throw PolicyError.wrongEnvironment }
        guard let original = renewal.originalTransactionId, original == transaction.originalTransactionId else {
            throw PolicyError.renewalMismatch
        }
        if let ownerAccountId, let token = renewal.appAccountToken, token.lowercased() != ownerAccountId.lowercased() {
            throw PolicyError.accountMismatch
        }
    }

    /// Evaluates a payload already verified by ``JWSVerifier`` for the household owner.
    ///
    /// Checks in order: bundle, product (missing is wrong), environment, revocation,
    /// `appAccountToken` equal to `ownerAccountId` ignoring case (missing is a mismatch).
    /// Expiry is not an error: the status is inactive when `expiresDate <= now`; a
    /// transaction without `expiresDate` is active.
    ///
    /// - Throws: ``PolicyError``.
    public func evaluate(_ payload: JWSTransactionDecodedPayload, ownerAccountId: String, now: Date) throws -> SubscriptionStatus {
        guard payload.bundleId == bundleId else { throw PolicyError.wrongBundle }
        guard let productId = payload.productId, productIds.contains(productId) else { throw PolicyError.wrongProduct }
        let environment = try checkEnvironment(payload.environment)
        guard payload.revocationDate == nil else { throw PolicyError.revoked }
        guard let token = payload.appAccountToken,
              !ownerAccountId.isEmpty,
              token.lowercased() == ownerAccountId.lowercased() else { throw PolicyError.accountMismatch }
        let active = payload.expiresDate.map { $0 > now } ?? true
        return SubscriptionStatus(
            active: active,
            productId: productId,
            originalTransactionId: payload.originalTransactionId ?? payload.transactionId ?? "",
            expiresAt: payload.expiresDate,
            environment: environment)
    }
}
