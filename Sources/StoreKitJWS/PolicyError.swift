/// Why a cryptographically valid transaction does not grant the entitlement.
public enum PolicyError: Error, Equatable, Sendable {
    /// `bundleId` differs from the configured bundle id.
    case wrongBundle
    /// `productId` is missing or not among the configured products.
    case wrongProduct
    /// `environment` is missing, not allowed, or is `Xcode`/`LocalTesting` (never allowed).
    case wrongEnvironment
    /// The transaction carries a `revocationDate`.
    case revoked
    /// `appAccountToken` is missing or differs from the owner's account id.
    case accountMismatch
    /// A notification's `appAppleId` differs from the configured one (or is missing in Production).
    case wrongAppAppleId
    /// Renewal info belongs to another purchase than its transaction (`originalTransactionId`).
    case renewalMismatch

    /// The stable error code: `wrong_bundle`, `wrong_product`, `wrong_environment`, `revoked`,
    /// `account_mismatch`, `wrong_app_apple_id`, `renewal_mismatch`.
    public var code: String {
        switch self {
        case .wrongBundle: return "wrong_bundle"
        case .wrongProduct: return "wrong_product"
        case .wrongEnvironment: return "wrong_environment"
        case .revoked: return "revoked"
        case .accountMismatch: return "account_mismatch"
        case .wrongAppAppleId: return "wrong_app_apple_id"
        case .renewalMismatch: return "renewal_mismatch"
        }
    }
}
