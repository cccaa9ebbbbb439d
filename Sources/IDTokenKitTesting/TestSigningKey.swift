import COpenSSL
import LedgerModel
import StoreKitJWS

/// A private key made in process, to sign ID tokens in tests, benchmarks and tools: RSA
/// (any size OpenSSL makes, 512 bits and up) for RS256, P-256 for ES256.
///
/// ```swift
/// let key = try TestSigningKey.rsa(keyID: "k1")
/// let jwks = TestSigningKey.keySet([key.jwk()])
/// let token = key.sign(claims: ["iss": "https://issuer.example", …])
/// ```
public final class TestSigningKey: @unchecked Sendable {
    /// `kid` of the key in its JWK and in the headers ``sign(claims:header:)`` writes.
    public let keyID: String
    /// `RS256` or `ES256`.
    public let algorithm: String
    private let key: OpaquePointer

    private init(key: OpaquePointer, keyID: String, algorithm: String) {
        self.key = key
        self.keyID = keyID
        self.algorithm = algorithm
    }

    deinit { EVP_PKEY_free(key) }

    /// A key read from PEM (PKCS#8 `PRIVATE KEY`, or the traditional RSA/EC forms): RSA for
    /// RS256, P-256 for ES256.
    public convenience init(privateKeyPEM: String, keyID: String) throws {
        let pem = Array(privateKeyPEM.utf8)
        let key: OpaquePointer? = pem.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else { return nil }
            defer { BIO_free(bio) }
            return PEM_read_bio_PrivateKey(bio, nil, nil, nil)
        }
        guard let key else { throw OpenSSLError("cannot read the PEM private key") }
        switch EVP_PKEY_get_base_id(key) {
        case EVP_PKEY_RSA: self.init(key: key, keyID: keyID, algorithm: "RS256")
        case EVP_PKEY_EC where Self.groupName(key) == "prime256v1": self.init(key: key, keyID: keyID, algorithm: "ES256")
        default:
            EVP_PKEY_free(key)
            throw OpenSSLError("the key is neither RSA nor P-256")
        }
    }

    private static func groupName(_ key: OpaquePointer) -> String {
        var name = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(key, &name, name.count, &length) == 1 else { return "" }
        return String(decoding: name.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// A new RSA key of `bits` bits (default 2048), exponent 65537.
    public static func rsa(bits: Int = 2048, keyID: String) throws -> TestSigningKey {
        try generate(EVP_PKEY_RSA, keyID: keyID, algorithm: "RS256") { EVP_PKEY_CTX_set_rsa_keygen_bits($0, Int32(bits)) }
    }

    /// A new P-256 key.
    public static func p256(keyID: String) throws -> TestSigningKey {
        try generate(EVP_PKEY_EC, keyID: keyID, algorithm: "ES256") {
            EVP_PKEY_CTX_set_ec_paramgen_curve_nid($0, NID_X9_62_prime256v1)
        }
    }

    private static func generate(_ type: Int32, keyID: String, algorithm: String,
                                 _ configure: (OpaquePointer) -> Int32) throws -> TestSigningKey {
        defer { ERR_clear_error() }
        guard let context = EVP_PKEY_CTX_new_id(type, nil) else { throw OpenSSLError("cannot allocate a key context") }
        defer { EVP_PKEY_CTX_free(context) }
        var key: OpaquePointer?
        guard EVP_PKEY_keygen_init(context) == 1, configure(context) == 1, EVP_PKEY_keygen(context, &key) == 1, let key else {
            throw OpenSSLError("cannot generate a key")
        }
        return TestSigningKey(key: key, keyID: keyID, algorithm: algorithm)
    }

    /// The public JWK: `kty`, `kid`, `use` `sig`, the numbers, and `alg` (`alg`, default this
    /// key's algorithm) unless `includeAlg` is false. `extra` members are added or replace these.
    public func jwk(alg: String? = nil, includeAlg: Bool = true, extra: JSONObject = [:]) -> JSONObject {
        var object: JSONObject
        if algorithm == "RS256" {
            object = ["kty": "RSA", "kid": .string(keyID), "use": "sig",
                      "n": .string(Base64Codec.encode(bigNumber("n"), alphabet: .url)),
                      "e": .string(Base64Codec.encode(bigNumber("e"), alphabet: .url))]
        } else {
            let point = encodedPoint()
            object = ["kty": "EC", "kid": .string(keyID), "use": "sig", "crv": "P-256",
                      "x": .string(Base64Codec.encode(point[1...32], alphabet: .url)),
                      "y": .string(Base64Codec.encode(point[33...64], alphabet: .url))]
        }
        if includeAlg { object["alg"] = .string(alg ?? algorithm) }
        for (name, value) in extra.pairs { object[name] = value }
        return object
    }

    /// A JWKS document of `keys`.
    public static func keySet(_ keys: [JSONObject]) -> [UInt8] {
        JSONValue.object(["keys": .array(keys.map(JSONValue.object))]).serialized()
    }

    /// The RSA modulus (`n`) or exponent (`e`), big-endian without leading zeros.
    public func bigNumber(_ name: String) -> [UInt8] {
        var number: OpaquePointer?
        guard EVP_PKEY_get_bn_param(key, name, &number) == 1, let number else { return [] }
        defer { BN_free(number) }
        var bytes = [UInt8](repeating: 0, count: (Int(BN_num_bits(number)) + 7) / 8)
        _ = BN_bn2bin(number, &bytes)
        return bytes
    }

    /// The uncompressed EC point `04 ‖ x ‖ y` (65 bytes).
    private func encodedPoint() -> [UInt8] {
        var point = [UInt8](repeating: 0, count: 65)
        var length = 0
        _ = EVP_PKEY_get_octet_string_param(key, "encoded-pub-key", &point, point.count, &length)
        return point
    }

    /// The public key as PEM `SubjectPublicKeyInfo` (what an HS256 confusion attack uses as
    /// the HMAC secret).
    public var publicKeyPEM: String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard PEM_write_bio_PUBKEY(bio, key) == 1 else { return "" }
        var pem = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(bio)))
        _ = BIO_read(bio, &pem, Int32(pem.count))
        return String(decoding: pem, as: UTF8.self)
    }

    /// The JWS signature of `message`: PKCS#1 v1.5 for RSA, raw `r ‖ s` for P-256.
    public func signature(for message: [UInt8]) -> [UInt8] {
        defer { ERR_clear_error() }
        guard let context = EVP_MD_CTX_new() else { return [] }
        defer { EVP_MD_CTX_free(context) }
        var length = 0
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, key) == 1,
              EVP_DigestSign(context, nil, &length, message, message.count) == 1 else { return [] }
        var signature = [UInt8](repeating: 0, count: length)
        guard EVP_DigestSign(context, &signature, &length, message, message.count) == 1 else { return [] }
        signature = Array(signature.prefix(length))
        return algorithm == "ES256" ? Self.rawECDSA(der: signature) : signature
    }

    private static func rawECDSA(der: [UInt8]) -> [UInt8] {
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, buffer.count)
        }
        guard let parsed else { return [] }
        defer { ECDSA_SIG_free(parsed) }
        var r: OpaquePointer?, s: OpaquePointer?
        ECDSA_SIG_get0(parsed, &r, &s)
        var raw = [UInt8](repeating: 0, count: 64)
        raw.withUnsafeMutableBufferPointer { out in
            _ = BN_bn2binpad(r, out.baseAddress, 32)
            _ = BN_bn2binpad(s, out.baseAddress! + 32, 32)
        }
        return raw
    }

    /// A compact JWS of exactly these header and payload bytes, signed with this key whatever
    /// the header says.
    public func sign(headerJSON: [UInt8], payloadJSON: [UInt8]) -> String {
        let input = Base64Codec.encode(headerJSON, alphabet: .url) + "." + Base64Codec.encode(payloadJSON, alphabet: .url)
        return input + "." + Base64Codec.encode(signature(for: Array(input.utf8)), alphabet: .url)
    }

    /// A token of `claims` under the header `{"alg": algorithm, "kid": keyID, "typ": "JWT"}`
    /// with `header`'s members added or replacing those (`.null` removes one).
    public func sign(claims: JSONObject, header: JSONObject = [:]) -> String {
        sign(headerJSON: headerJSON(header), payloadJSON: JSONValue.object(claims).serialized())
    }

    /// This key's default header with `changes` applied (`.null` removes a member).
    public func headerJSON(_ changes: JSONObject = [:]) -> [UInt8] {
        var object: JSONObject = ["alg": .string(algorithm), "kid": .string(keyID), "typ": "JWT"]
        for (name, value) in changes.pairs { object[name] = value.isNull ? JSONValue?.none : value }
        return JSONValue.object(object).serialized()
    }
}
