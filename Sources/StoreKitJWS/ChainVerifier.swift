import COpenSSL
import Foundation

/// Verifies an App Store certificate chain, leaf → intermediate → a configured trusted root.
///
/// Trust comes only from the roots given at initialisation: the root certificate a JWS
/// carries in `x5c[2]` is never added to the store (it is parsed for shape, then ignored).
/// Verification uses OpenSSL's `X509_verify_cert` at an explicit time, without
/// `X509_V_FLAG_X509_STRICT` (Apple's test certificates carry no Authority Key Identifier).
/// Beyond path validation the leaf must carry OID 1.2.840.113635.100.6.11.1 and not be a CA;
/// the intermediate must carry OID 1.2.840.113635.100.6.2.1 and have basicConstraints
/// `CA:TRUE`; the built path must be exactly leaf, the given intermediate, a trusted root.
public struct ChainVerifier: Sendable {
    /// The trust anchors.
    public let trustedRoots: [TrustedRoot]

    /// Creates a verifier that trusts exactly `trustedRoots`.
    public init(trustedRoots: [TrustedRoot]) {
        self.trustedRoots = trustedRoots
    }

    /// Verifies `leafDER` issued by `intermediateDER` chaining to a trusted root at `date`.
    ///
    /// - Throws: ``JWSError/invalidChain(_:)`` with OpenSSL's reason.
    public func verify(leafDER: [UInt8], intermediateDER: [UInt8], at date: Date) throws(JWSError) {
        guard let leaf = X509Certificate(der: leafDER) else { throw .invalidChain("leaf is not a DER certificate") }
        guard let intermediate = X509Certificate(der: intermediateDER) else {
            throw .invalidChain("intermediate is not a DER certificate")
        }
        try verify(leaf: leaf, intermediate: intermediate, at: date)
    }

    /// Verifies already parsed certificates; see ``verify(leafDER:intermediateDER:at:)``.
    func verify(leaf: X509Certificate, intermediate: X509Certificate, at date: Date) throws(JWSError) {
        defer { ERR_clear_error() }
        guard !trustedRoots.isEmpty else { throw .invalidChain("no trusted root configured") }
        guard leaf.hasExtension(oid: X509Certificate.appStoreLeafOID) else {
            throw .invalidChain("leaf lacks the App Store signing extension")
        }
        guard intermediate.hasExtension(oid: X509Certificate.appleIntermediateOID) else {
            throw .invalidChain("intermediate lacks the Apple intermediate extension")
        }
        guard !leaf.isCA else { throw .invalidChain("leaf is a CA certificate") }
        guard intermediate.isCA else { throw .invalidChain("intermediate is not a CA certificate") }
        guard !leaf.hasInvalidExtensions, !intermediate.hasInvalidExtensions else {
            throw .invalidChain("certificate has invalid extensions")
        }
        let seconds = date.timeIntervalSince1970.rounded(.down)
        guard seconds.isFinite, let time = time_t(exactly: seconds) else {
            throw .invalidChain("validation time out of range")
        }

        guard let store = X509_STORE_new() else { throw .invalidChain("cannot allocate X509_STORE") }
        defer { X509_STORE_free(store) }
        var roots: [X509Certificate] = []
        for root in trustedRoots {
            guard let certificate = X509Certificate(der: root.der) else { continue }
            // The store takes its own reference.
            guard X509_STORE_add_cert(store, certificate.pointer) == 1 else {
                ERR_clear_error()
                continue
            }
            roots.append(certificate)
        }
        guard !roots.isEmpty else { throw .invalidChain("no usable trusted root") }

        guard let untrusted = OPENSSL_sk_new_null() else { throw .invalidChain("cannot allocate stack") }
        // Frees the stack only; the intermediate stays owned by its wrapper.
        defer { OPENSSL_sk_free(untrusted) }
        guard OPENSSL_sk_push(untrusted, UnsafeRawPointer(intermediate.pointer)) > 0 else {
            throw .invalidChain("cannot build untrusted stack")
        }

        guard let context = X509_STORE_CTX_new() else { throw .invalidChain("cannot allocate X509_STORE_CTX") }
        defer { X509_STORE_CTX_free(context) }
        guard X509_STORE_CTX_init(context, store, leaf.pointer, untrusted) == 1 else {
            throw .invalidChain("cannot initialise verification")
        }
        guard let parameters = X509_STORE_CTX_get0_param(context) else {
            throw .invalidChain("cannot access verification parameters")
        }
        X509_VERIFY_PARAM_set_time(parameters, time)

        guard X509_verify_cert(context) == 1 else {
            let code = X509_STORE_CTX_get_error(context)
            let reason = X509_verify_cert_error_string(Int(code)).map { String(cString: $0) } ?? "unknown"
            throw .invalidChain(reason)
        }
        guard let chain = X509_STORE_CTX_get0_chain(context), OPENSSL_sk_num(chain) == 3 else {
            throw .invalidChain("chain is not leaf, intermediate, root")
        }
        guard let middle = OPENSSL_sk_value(chain, 1),
              X509_cmp(OpaquePointer(middle), intermediate.pointer) == 0 else {
            throw .invalidChain("chain does not pass through the given intermediate")
        }
        withExtendedLifetime(roots) {}
    }
}
