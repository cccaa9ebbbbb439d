import COpenSSL
import Foundation

/// Verifies App Store signed data — transactions, renewal info, notifications (compact JWS,
/// ES256, `x5c` chain).
///
/// Checks, in order, each failing with its own ``JWSError``:
/// 1. three canonical base64url segments, JSON header → `malformed`;
/// 2. header `alg` exactly `ES256` → `unsupportedAlgorithm` (an unsecured `alg: none` JWS,
///    empty signature segment and all, lands here); then an empty signature → `malformed`;
/// 3. `x5c` of exactly three standard-base64 DER certificates → `invalidChain`;
/// 4. payload JSON decodes (and has `signedDate` when validating at it) → `malformed`;
/// 5. `x5c[0]` → `x5c[1]` → a configured trusted root, with Apple's OIDs (see
///    ``ChainVerifier``) → `invalidChain`; `x5c[2]` is never trusted;
/// 6. raw `r ‖ s` ECDSA P-256 signature over `header.payload` with the leaf key → `invalidSignature`.
///
/// The payload is returned only after every check passes; business rules are
/// ``SubscriptionPolicy``'s job.
public struct JWSVerifier: Sendable {
    /// The chain verifier holding the trust anchors.
    public let chainVerifier: ChainVerifier

    /// Creates a verifier trusting exactly `trustedRoots` (never roots carried by a JWS).
    public init(trustedRoots: [TrustedRoot]) {
        chainVerifier = ChainVerifier(trustedRoots: trustedRoots)
    }

    /// Verifies `compact`, validating the chain at the payload's `signedDate`.
    ///
    /// - Throws: ``JWSError``; a payload without `signedDate` is `malformed`.
    public func verifyTransaction(_ compact: String) throws -> JWSTransactionDecodedPayload {
        try verify(compact, as: JWSTransactionDecodedPayload.self, at: nil)
    }

    /// Verifies `compact`, validating the chain at `chainValidationDate` instead of `signedDate`.
    ///
    /// - Throws: ``JWSError``.
    public func verifyTransaction(_ compact: String, chainValidationDate: Date) throws -> JWSTransactionDecodedPayload {
        try verify(compact, as: JWSTransactionDecodedPayload.self, at: chainValidationDate)
    }

    /// Verifies any App Store signed payload (renewal info, notification, transaction) with
    /// the same checks, validating the chain at its own `signedDate`.
    ///
    /// - Throws: ``JWSError``; a payload that does not decode as `P`, or has no `signedDate`, is `malformed`.
    public func verify<P: AppStoreSignedPayload>(_ compact: String, as type: P.Type) throws(JWSError) -> P {
        try verify(compact, as: type, at: nil)
    }

    private func verify<P: AppStoreSignedPayload>(_ compact: String, as type: P.Type, at explicitDate: Date?) throws(JWSError) -> P {
        let jws = try CompactJWS(compact)
        let header = try JWSHeader(jws)

        let payload: P
        do {
            payload = try JSONDecoder().decode(P.self, from: Data(jws.payload))
        } catch {
            throw .malformed("payload is not a \(P.kind) JSON object")
        }
        guard let validationDate = explicitDate ?? payload.signedDate else {
            throw .malformed("payload has no signedDate")
        }

        guard let leaf = X509Certificate(der: header.certificates[0]),
              let intermediate = X509Certificate(der: header.certificates[1]) else {
            throw .invalidChain("x5c certificate does not parse")
        }
        try chainVerifier.verify(leaf: leaf, intermediate: intermediate, at: validationDate)

        guard jws.signature.count == ES256.signatureLength else { throw .invalidSignature }
        guard let key = X509_get0_pubkey(leaf.pointer) else {
            ERR_clear_error()
            throw .invalidSignature
        }
        // `key` is borrowed from `leaf`, which stays alive past this call.
        let valid = withExtendedLifetime(leaf) {
            ES256.verify(signature: jws.signature, message: jws.signingInput, key: key)
        }
        guard valid else { throw .invalidSignature }
        return payload
    }
}

/// A payload the App Store signs: decodable, with the `signedDate` its chain is checked at.
public protocol AppStoreSignedPayload: Decodable {
    /// When the App Store signed it.
    var signedDate: Date? { get }
    /// What it is, for error messages (`transaction`, `renewal info`, `notification`).
    static var kind: String { get }
}

extension JWSTransactionDecodedPayload: AppStoreSignedPayload {
    public static var kind: String { "transaction" }
}
