import Foundation

/// A compact JWS split into its three strictly decoded segments (RFC 7515 section 7.1).
struct CompactJWS: Sendable {
    /// The largest compact serialization accepted; Apple's signed transactions are a few KiB.
    static let maximumLength = 64 * 1024

    /// The decoded protected header (JSON bytes).
    let header: [UInt8]
    /// The decoded payload (JSON bytes).
    let payload: [UInt8]
    /// The decoded signature; empty for an unsecured JWS (`header.payload.`), which the
    /// verifier refuses by its `alg` before it looks at the signature.
    let signature: [UInt8]
    /// The ASCII signing input `base64url(header) "." base64url(payload)`.
    let signingInput: [UInt8]

    /// Splits and decodes `compact`; throws ``JWSError/malformed(_:)`` on any deviation.
    /// The signature segment may be empty (RFC 7515's unsecured form): whether that is
    /// acceptable depends on the header's `alg`, so it is judged after the header.
    init(_ compact: String) throws(JWSError) {
        let bytes = Array(compact.utf8)
        guard !bytes.isEmpty else { throw .malformed("empty input") }
        guard bytes.count <= Self.maximumLength else { throw .malformed("input too large") }
        let parts = bytes.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 else { throw .malformed("expected three dot-separated segments") }
        guard !parts[0].isEmpty, !parts[1].isEmpty else { throw .malformed("empty segment") }
        guard let header = Base64Codec.decode(parts[0], alphabet: .url), !header.isEmpty else {
            throw .malformed("header is not canonical base64url")
        }
        guard let payload = Base64Codec.decode(parts[1], alphabet: .url), !payload.isEmpty else {
            throw .malformed("payload is not canonical base64url")
        }
        guard let signature = Base64Codec.decode(parts[2], alphabet: .url) else {
            throw .malformed("signature is not canonical base64url")
        }
        self.header = header
        self.payload = payload
        self.signature = signature
        self.signingInput = Array(bytes[0..<(parts[0].count + 1 + parts[1].count)])
    }
}
