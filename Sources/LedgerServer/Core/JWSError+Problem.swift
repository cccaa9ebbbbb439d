import StoreKitJWS

extension JWSError {
    /// The 422 detail for a refused `what` ("signed transaction", "notification", …), in the
    /// API's words: never the verifier's own reason, which may be OpenSSL's.
    func problemDetail(_ what: String) -> String {
        switch self {
        case .malformed:
            return "The \(what) is not a well-formed App Store JWS: three base64url segments, a JSON header, and a payload "
                + "with the fields the App Store signs."
        case .unsupportedAlgorithm:
            return "The \(what) is not signed with ES256 (its header's alg must be exactly ES256)."
        case .invalidChain:
            return "The certificate chain of the \(what) does not verify against Apple's root (x5c must hold the App Store's "
                + "leaf, intermediate and root certificates, valid at its signedDate)."
        case .invalidSignature:
            return "The signature of the \(what) does not verify with the key of its signing certificate."
        }
    }
}

extension PolicyError {
    /// The 422 detail for a `what` that verified but does not pass this server's rules.
    func problemDetail(_ what: String) -> String {
        switch self {
        case .wrongBundle:
            return "The \(what) is for another app than this server's bundle id."
        case .wrongProduct:
            return "The \(what) is not for a product this server grants Pro for."
        case .wrongEnvironment:
            return "The \(what) comes from an App Store environment this server does not accept."
        case .revoked:
            return "The purchase in the \(what) was refunded or revoked."
        case .accountMismatch:
            return "The purchase in the \(what) belongs to another account (appAccountToken) than the household's owner."
        case .wrongAppAppleId:
            return "The \(what) is for another app than this server's app Apple id."
        case .renewalMismatch:
            return "The renewal info belongs to another purchase than its transaction."
        }
    }
}
