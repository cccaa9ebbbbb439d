import COpenSSL
import Foundation

extension ES256Signer {
    /// A new P-256 private key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
    public static func generatePrivateKeyPEM() throws -> String {
        defer { ERR_clear_error() }
        guard let context = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, nil) else { throw OpenSSLError("cannot allocate key context") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1,
              EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, NID_X9_62_prime256v1) == 1,
              EVP_PKEY_keygen(context, &key) == 1, let key else { throw OpenSSLError("cannot generate a P-256 key") }
        defer { EVP_PKEY_free(key) }
        guard let bio = BIO_new(BIO_s_mem()) else { throw OpenSSLError("cannot allocate BIO") }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PrivateKey(bio, key, nil, nil, 0, nil, nil) == 1 else { throw OpenSSLError("cannot write PEM") }
        let length = Int(BIO_ctrl_pending(bio))
        var pem = [UInt8](repeating: 0, count: length)
        guard length > 0, BIO_read(bio, &pem, Int32(length)) == Int32(length) else { throw OpenSSLError("cannot read PEM") }
        return String(decoding: pem, as: UTF8.self)
    }

    /// The public key's affine coordinates, 32 bytes each, as a JWK's `x` and `y` carry them.
    public func publicKeyCoordinates() throws -> (x: [UInt8], y: [UInt8]) {
        try withKey { key in
            var point = [UInt8](repeating: 0, count: 65)
            var length = 0
            guard EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", &point, point.count, &length) == 1,
                  length == 65, point[0] == 0x04 else {
                throw OpenSSLError("cannot read the public key")
            }
            return (Array(point[1...32]), Array(point[33...64]))
        }
    }
}

/// A P-256 public key given by its JWK coordinates, to verify ES256 compact JWS.
public struct ES256PublicKey: Sendable {
    private let spki: [UInt8]

    /// `SubjectPublicKeyInfo` DER of a P-256 key without the point (RFC 5480).
    private static let spkiPrefix: [UInt8] = [
        0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08,
        0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00, 0x04,
    ]

    /// Throws ``OpenSSLError`` unless (x, y) is a point on P-256.
    public init(x: [UInt8], y: [UInt8]) throws {
        guard x.count == 32, y.count == 32 else { throw OpenSSLError("coordinates must be 32 bytes each") }
        spki = Self.spkiPrefix + x + y
        try withKey { _ in () }
    }

    private func withKey<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        var cursor: UnsafePointer<UInt8>?
        let key: OpaquePointer? = spki.withUnsafeBufferPointer { buffer in
            cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let key else { throw OpenSSLError("not a P-256 public key") }
        defer { EVP_PKEY_free(key) }
        guard ES256.isP256(key) else { throw OpenSSLError("not a P-256 public key") }
        return try body(key)
    }

    /// The payload bytes of `compact` when its header says `alg` `ES256` and its signature
    /// verifies with this key; otherwise nil.
    public func verifiedPayload(_ compact: String) -> [UInt8]? {
        guard let jws = try? CompactJWS(compact), jws.signature.count == ES256.signatureLength,
              let header = try? JSONSerialization.jsonObject(with: Data(jws.header)) as? [String: Any],
              header["alg"] as? String == "ES256" else { return nil }
        let valid = (try? withKey { ES256.verify(signature: jws.signature, message: jws.signingInput, key: $0) }) ?? false
        return valid ? jws.payload : nil
    }
}
