import Foundation

/// The business rules a verified transaction must meet to grant Pro to a household.
public struct SubscriptionPolicy: Sendable {
    /// The app's bundle id; `bundleId` must equal it exactly.
    public var bundleId: String
    /// The Pro product ids; `productId` must be one of them.
    public var productIds: Set<String>
    /// Accepted environments; ``neverAcceptedEnvironments`` are refused even if listed.
    public var environments: Set<String>

    /// Environments whose transactions are signed locally and never grant anything.
    public static let neverAcceptedEnvironments: Set<String> = ["Xcode", "LocalTesting"]

    /// Creates a policy; by default only `Production` purchases are accepted.
    public init(bundleId: String, productIds: Set<String>, environments: Set<String> = ["Production"]) {
        self.bundleId = bundleId
        self.productIds = productIds
        self.environments = environments
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
        guard let environment = payload.environment,
              environments.contains(environment),
              !Self.neverAcceptedEnvironments.contains(environment) else { throw PolicyError.wrongEnvironment }
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
