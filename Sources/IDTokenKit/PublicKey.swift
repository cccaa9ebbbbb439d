import COpenSSL

/// An OpenSSL public key pinned to one JWS algorithm: RSA of 2048 to 8192 bits for RS256, a
/// P-256 point for ES256. Immutable once made, so one key verifies on many threads at once
/// (OpenSSL 3 allows concurrent use of an `EVP_PKEY` nothing modifies).
final class PublicKey: @unchecked Sendable {
    /// RSA moduli below this many bits are refused (`--oidc-provider` key sets included).
    static let minimumRSABits = 2048
    /// RSA moduli above this many bits are refused: nobody publishes them and they cost
    /// verification time.
    static let maximumRSABits = 8192

    let algorithm: JWSAlgorithm
    /// The modulus size (RSA) or the curve size (EC), in bits.
    let bits: Int
    private let key: OpaquePointer

    private init(key: OpaquePointer, algorithm: JWSAlgorithm) {
        self.key = key
        self.algorithm = algorithm
        self.bits = Int(EVP_PKEY_get_bits(key))
    }

    deinit { EVP_PKEY_free(key) }

    /// An RS256 key from a JWK's big-endian modulus `n` and exponent `e`.
    static func rsa(modulus: [UInt8], exponent: [UInt8]) throws(KeyError) -> PublicKey {
        let n = modulus.drop { $0 == 0 }
        let e = exponent.drop { $0 == 0 }
        guard let top = n.first else { throw .invalid("RSA modulus is zero") }
        let bits = n.count * 8 - top.leadingZeroBitCount
        guard bits >= minimumRSABits else { throw .weak("RSA modulus of \(bits) bits, fewer than \(minimumRSABits)") }
        guard bits <= maximumRSABits else { throw .invalid("RSA modulus of \(bits) bits, more than \(maximumRSABits)") }
        // Odd and at least 3; at most 32 bits, as every real key's 65537 is.
        guard let last = e.last, last & 1 == 1, e.count <= 4, e.count > 1 || last >= 3 else {
            throw .invalid("RSA exponent must be odd, at least 3 and at most 32 bits")
        }
        guard n.last.map({ $0 & 1 == 1 }) == true else { throw .invalid("RSA modulus is even") }
        let rsaPublicKey = DER.sequence(DER.unsignedInteger(n), DER.unsignedInteger(e))
        let spki = DER.sequence(DER.sequence(DER.objectIdentifier(DER.rsaEncryption), DER.null),
                                DER.bitString(rsaPublicKey))
        let key = try decode(spki)
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_RSA, EVP_PKEY_get_bits(key) == Int32(bits) else {
            EVP_PKEY_free(key)
            throw .invalid("not an RSA public key")
        }
        return PublicKey(key: key, algorithm: .rs256)
    }

    /// An ES256 key from a JWK's P-256 affine coordinates, 32 bytes each; the point must be
    /// on the curve (OpenSSL checks it while decoding).
    static func p256(x: [UInt8], y: [UInt8]) throws(KeyError) -> PublicKey {
        guard x.count == 32, y.count == 32 else { throw .invalid("P-256 coordinates must be 32 bytes each") }
        let spki = DER.sequence(DER.sequence(DER.objectIdentifier(DER.ecPublicKey), DER.objectIdentifier(DER.prime256v1)),
                                DER.bitString([0x04] + x + y))
        let key = try decode(spki)
        guard EVP_PKEY_get_base_id(key) == EVP_PKEY_EC, EVP_PKEY_get_bits(key) == 256 else {
            EVP_PKEY_free(key)
            throw .invalid("not a P-256 public key")
        }
        return PublicKey(key: key, algorithm: .es256)
    }

    private static func decode(_ spki: [UInt8]) throws(KeyError) -> OpaquePointer {
        defer { ERR_clear_error() }
        let key: OpaquePointer? = spki.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let key else { throw .invalid("OpenSSL refused the key") }
        return key
    }

    /// Whether `signature` (RS256: as long as the modulus; ES256: raw `r ‖ s`, 64 bytes) is
    /// this key's signature of `message` under its algorithm.
    func verify(signature: [UInt8], message: [UInt8]) -> Bool {
        let encoded: [UInt8]
        switch algorithm {
        case .rs256:
            guard signature.count == (bits + 7) / 8 else { return false }
            encoded = signature
        case .es256:
            guard signature.count == 64 else { return false }
            encoded = DER.sequence(DER.unsignedInteger(signature[0..<32]), DER.unsignedInteger(signature[32..<64]))
        }
        defer { ERR_clear_error() }
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, Self.sha256, nil, key) == 1 else { return false }
        return EVP_DigestVerify(context, encoded, encoded.count, message, message.count) == 1
    }

    /// SHA-256 fetched once: an implicit fetch per verification costs a lookup each time.
    private nonisolated(unsafe) static let sha256: OpaquePointer? = EVP_MD_fetch(nil, "SHA256", nil)
}

/// Why a JWK's numbers make no usable key.
enum KeyError: Error, Equatable, Sendable {
    /// An RSA modulus under ``PublicKey/minimumRSABits``.
    case weak(String)
    /// Anything else OpenSSL or the checks above refuse.
    case invalid(String)

    var message: String {
        switch self {
        case .weak(let message), .invalid(let message): return message
        }
    }
}
