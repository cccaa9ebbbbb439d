import LedgerModel
import StoreKitJWS

/// A compact JWS (RFC 7515 section 7.1) split into strictly decoded parts, its header read.
///
/// The payload is kept as bytes: it is parsed only after the signature verifies.
struct CompactJWT {
    /// The longest token accepted, in bytes (16 KiB); ID tokens are one or two KiB. Longer
    /// input is refused before any decoding.
    static let maximumLength = 16 * 1024
    /// The most members a header or claims object (or any object inside) may have.
    static let maximumMembers = 128

    let header: JOSEHeader
    /// The decoded payload, JSON not yet parsed.
    let payload: [UInt8]
    let signature: [UInt8]
    /// `base64url(header) "." base64url(payload)`, the bytes the signature covers.
    let signingInput: [UInt8]

    /// Throws ``IDTokenError/malformed`` for anything but three canonical base64url segments
    /// (the signature's may be empty) whose header is a JSON object without duplicate members,
    /// then as ``JOSEHeader`` says.
    init(_ token: String) throws(IDTokenError) {
        let length = token.utf8.count
        guard length <= Self.maximumLength, length > 0 else { throw .malformed }
        let bytes = Array(token.utf8)
        guard let firstDot = bytes.firstIndex(of: UInt8(ascii: ".")),
              let secondDot = bytes[(firstDot + 1)...].firstIndex(of: UInt8(ascii: ".")),
              !bytes[(secondDot + 1)...].contains(UInt8(ascii: ".")) else { throw .malformed }
        guard firstDot > 0, secondDot > firstDot + 1,
              let headerJSON = Base64Codec.decode(bytes[..<firstDot], alphabet: .url),
              let payload = Base64Codec.decode(bytes[(firstDot + 1)..<secondDot], alphabet: .url),
              let signature = Base64Codec.decode(bytes[(secondDot + 1)...], alphabet: .url) else { throw .malformed }
        let header: JSONValue
        do { header = try JSONValue.parse(headerJSON, maxObjectMembers: Self.maximumMembers) } catch { throw .malformed }
        guard let object = header.objectValue else { throw .malformed }
        self.header = try JOSEHeader(object)
        self.payload = payload
        self.signature = signature
        self.signingInput = Array(bytes[..<secondDot])
    }
}

/// The protected header members the verifier acts on.
///
/// `jku`, `x5u`, `x5c` and `jwk` are ignored: keys come only from the provider's configured
/// key set, never from the token. `typ` is not checked (providers differ: `JWT`, none, …).
struct JOSEHeader {
    let algorithm: JWSAlgorithm
    /// `kid`, when present.
    let keyID: String?

    /// Throws ``IDTokenError/malformed`` for any `crit` (no extension is understood, so a
    /// critical one can never be honoured, RFC 7515 4.1.11) or a `kid` that is not a string,
    /// then ``IDTokenError/unsupportedAlgorithm`` unless `alg` is `RS256` or `ES256`.
    init(_ header: JSONObject) throws(IDTokenError) {
        if header["crit"] != nil { throw .malformed }
        switch header["kid"] {
        case nil: keyID = nil
        case .string(let kid)?: keyID = kid
        default: throw .malformed
        }
        guard case .string(let name)? = header["alg"], let algorithm = JWSAlgorithm(rawValue: name) else {
            throw .unsupportedAlgorithm
        }
        self.algorithm = algorithm
    }
}
