import Foundation

/// The parts of the JOSE protected header this verifier acts on.
struct JWSHeader: Sendable {
    /// The DER certificates of `x5c`, leaf first (exactly three).
    let certificates: [[UInt8]]

    /// Parses the header JSON of `jws`: `alg` must be exactly `ES256` (judged before the
    /// signature segment, so an unsecured JWS is `unsupportedAlgorithm`); the signature must
    /// then be non-empty; `x5c` must hold exactly three standard-base64 DER X.509
    /// certificates; an unknown `crit` is refused.
    init(_ jws: CompactJWS) throws(JWSError) {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(jws.header), options: [])
        } catch {
            throw .malformed("header is not JSON")
        }
        guard let fields = object as? [String: Any] else { throw .malformed("header is not a JSON object") }
        guard let alg = fields["alg"] as? String, alg == "ES256" else { throw .unsupportedAlgorithm }
        guard !jws.signature.isEmpty else { throw .malformed("empty signature segment") }
        if fields["crit"] != nil { throw .malformed("critical header parameters are not supported") }
        guard let x5cValue = fields["x5c"] else { throw .invalidChain("x5c missing") }
        guard let list = x5cValue as? [Any] else { throw .invalidChain("x5c is not an array") }
        guard list.count == 3 else { throw .invalidChain("x5c must hold exactly three certificates, got \(list.count)") }
        var certificates: [[UInt8]] = []
        for (index, entry) in list.enumerated() {
            guard let text = entry as? String else { throw .invalidChain("x5c[\(index)] is not a string") }
            guard let der = Base64Codec.decode(Array(text.utf8), alphabet: .standard), !der.isEmpty else {
                throw .invalidChain("x5c[\(index)] is not canonical base64")
            }
            guard X509Certificate(der: der) != nil else {
                throw .invalidChain("x5c[\(index)] is not a DER X.509 certificate")
            }
            certificates.append(der)
        }
        self.certificates = certificates
    }
}
