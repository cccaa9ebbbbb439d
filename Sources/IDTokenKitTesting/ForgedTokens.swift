import COpenSSL
import LedgerModel
import StoreKitJWS

/// Tokens no honest provider makes, for refusal tests.
public enum ForgedTokens {
    /// `header.payload.` signed with HMAC-SHA256 under `secret` (the `alg` confusion attack
    /// when `secret` is an RSA public key's PEM).
    public static func hmacSHA256(headerJSON: [UInt8], payloadJSON: [UInt8], secret: [UInt8]) -> String {
        let input = Base64Codec.encode(headerJSON, alphabet: .url) + "." + Base64Codec.encode(payloadJSON, alphabet: .url)
        return input + "." + Base64Codec.encode(hmac(key: secret, message: Array(input.utf8)), alphabet: .url)
    }

    /// `header.payload.` with the given signature bytes (empty for an unsecured JWS).
    public static func withSignature(headerJSON: [UInt8], payloadJSON: [UInt8], signature: [UInt8] = []) -> String {
        Base64Codec.encode(headerJSON, alphabet: .url) + "." + Base64Codec.encode(payloadJSON, alphabet: .url) + "."
            + Base64Codec.encode(signature, alphabet: .url)
    }

    /// HMAC-SHA256 (RFC 2104).
    public static func hmac(key: [UInt8], message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? sha256(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = sha256(block.map { $0 ^ 0x36 } + message)
        return sha256(block.map { $0 ^ 0x5C } + inner)
    }

    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: 32)
        _ = kidledger_sha256(bytes, bytes.count, &digest)
        return digest
    }
}
