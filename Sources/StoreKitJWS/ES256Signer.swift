import COpenSSL
import Foundation

/// Produces ES256 compact JWS with a P-256 private key; meant for tests and tooling.
///
/// ```swift
/// let signer = try ES256Signer(privateKeyPEM: keyPEM)
/// let jws = try signer.sign(payload: payload, x5c: [leafB64, intermediateB64, rootB64])
/// ```
public struct ES256Signer: Sendable {
    private let privateKeyPEM: [UInt8]

    /// Loads a P-256 private key from PEM (`EC PRIVATE KEY` or PKCS#8 `PRIVATE KEY`).
    public init(privateKeyPEM: String) throws {
        self.privateKeyPEM = Array(privateKeyPEM.utf8)
        try withKey { _ in () }
    }

    /// Loads a P-256 private key from a PEM file.
    public init(privateKeyPath: String) throws {
        guard let data = FileManager.default.contents(atPath: privateKeyPath) else {
            throw OpenSSLError("\(privateKeyPath): cannot read file")
        }
        try self.init(privateKeyPEM: String(decoding: data, as: UTF8.self))
    }

    func withKey<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        guard privateKeyPEM.count <= Int(Int32.max) else { throw OpenSSLError("PEM input too large") }
        return try privateKeyPEM.withUnsafeBytes { buffer in
            guard let bio = BIO_new_mem_buf(buffer.baseAddress, Int32(buffer.count)) else {
                throw OpenSSLError("cannot allocate BIO")
            }
            defer { BIO_free(bio) }
            guard let key = PEM_read_bio_PrivateKey(bio, nil, nil, nil) else {
                throw OpenSSLError("cannot read PEM private key")
            }
            defer { EVP_PKEY_free(key) }
            guard ES256.isP256(key) else { throw OpenSSLError("private key is not EC P-256") }
            return try body(key)
        }
    }

    /// Signs `message` (SHA-256, ECDSA P-256); returns the 64-byte raw `r ‖ s`.
    public func signature(for message: [UInt8]) throws -> [UInt8] {
        try withKey { key in
            guard let raw = ES256.sign(message: message, key: key) else { throw OpenSSLError("signing failed") }
            return raw
        }
    }

    /// Builds a compact JWS from exact header and payload bytes (no re-encoding), signed
    /// with this key whatever the header says — so tests can craft hostile headers.
    public func sign(headerJSON: [UInt8], payloadJSON: [UInt8]) throws -> String {
        let signingInput = Base64Codec.encode(headerJSON, alphabet: .url) + "." + Base64Codec.encode(payloadJSON, alphabet: .url)
        let raw = try signature(for: Array(signingInput.utf8))
        return signingInput + "." + Base64Codec.encode(raw, alphabet: .url)
    }

    /// Builds `{"alg":"ES256","typ":"JWT","x5c":[…]}` over `payloadJSON` and signs it.
    ///
    /// - Parameter x5c: standard-base64 DER certificates, leaf first.
    public func sign(payloadJSON: [UInt8], x5c: [String]) throws -> String {
        try sign(headerJSON: Self.headerJSON(x5c: x5c), payloadJSON: payloadJSON)
    }

    /// Encodes `payload` as JSON (dates as milliseconds for ``JWSTransactionDecodedPayload``) and signs it.
    public func sign<Payload: Encodable>(payload: Payload, x5c: [String]) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return try sign(payloadJSON: Array(try encoder.encode(payload)), x5c: x5c)
    }

    /// The header JSON this signer uses for `x5c`: `{"alg":"ES256","typ":"JWT","x5c":[…]}`.
    public static func headerJSON(x5c: [String], algorithm: String = "ES256") -> [UInt8] {
        let header: [String: Any] = ["alg": algorithm, "typ": "JWT", "x5c": x5c]
        return Array((try? JSONSerialization.data(withJSONObject: header, options: [.sortedKeys])) ?? Data())
    }
}
