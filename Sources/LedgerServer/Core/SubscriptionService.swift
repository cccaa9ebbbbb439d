import Foundation
import LedgerModel
import StoreKitJWS

/// Verifies App Store JWS for the subscription endpoints; exists only when a bundle id is
/// configured. The trust anchors are the configured roots, or Apple Root CA - G3.
final class SubscriptionService: Sendable {
    let verifier: JWSVerifier
    let policy: SubscriptionPolicy

    init(verifier: JWSVerifier, policy: SubscriptionPolicy) {
        self.verifier = verifier
        self.policy = policy
    }

    static func make(_ configuration: LedgerAppConfiguration) throws -> SubscriptionService? {
        guard let bundleId = configuration.bundleId, !bundleId.isEmpty else { return nil }
        let roots = try configuration.trustedRootPaths.isEmpty
            ? [TrustedRoot(der: AppleRootCAG3.der)]
            : configuration.trustedRootPaths.map { try TrustedRoot.load(path: $0) }
        return SubscriptionService(verifier: JWSVerifier(trustedRoots: roots),
                                   policy: SubscriptionPolicy(bundleId: bundleId, productIds: Set(configuration.productIds),
                                                              environments: Set(configuration.environments)))
    }

    /// A verified purchase, evaluated for its household's owner at `now`.
    struct Verified {
        var status: SubscriptionStatus
        var payload: JWSTransactionDecodedPayload
    }

    /// Verifies the JWS and applies the policy; failures become 422 with the failed check's code.
    func verify(_ jws: String, ownerAccountId: String, now: Date = Date()) throws -> Verified {
        do {
            let payload = try verifier.verifyTransaction(jws)
            let status = try policy.evaluate(payload, ownerAccountId: ownerAccountId, now: now)
            return Verified(status: status, payload: payload)
        } catch let e as JWSError {
            throw APIError(422, e.code, "The signed transaction was refused: \(e).")
        } catch let e as PolicyError {
            throw APIError(422, e.code, "The purchase does not grant Pro here: \(e).")
        }
    }
}
