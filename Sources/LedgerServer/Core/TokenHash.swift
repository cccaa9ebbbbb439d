import COpenSSL
import Foundation
import StoreKitJWS

/// Device token secrets: `kl_` + 43 base64url characters (32 random bytes).
/// Only their SHA-256 is stored; comparisons are constant-time.
enum TokenSecret {
    static let prefix = "kl_"

    static func generate() -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        if RAND_bytes(&bytes, 32) != 1 {
            var g = SystemRandomNumberGenerator()
            for i in 0..<32 { bytes[i] = UInt8.random(in: 0...255, using: &g) }
        }
        return prefix + base64url(bytes)
    }

    /// True when `s` has the shape of a token secret.
    static func isWellFormed(_ s: Substring) -> Bool {
        guard s.utf8.count == 46, s.hasPrefix(prefix) else { return false }
        return s.utf8.dropFirst(3).allSatisfy { ($0 >= 65 && $0 <= 90) || ($0 >= 97 && $0 <= 122) || ($0 >= 48 && $0 <= 57) || $0 == 45 || $0 == 95 }
    }

    static func sha256(_ s: some StringProtocol) -> [UInt8] {
        let input = Array(s.utf8)
        var out = [UInt8](repeating: 0, count: 32)
        _ = input.withUnsafeBufferPointer { SHA256($0.baseAddress, $0.count, &out) }
        return out
    }

    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return CRYPTO_memcmp(a, b, a.count) == 0
    }

    /// Unpadded base64url (the strict codec the JWS verifier uses).
    static func base64url(_ bytes: [UInt8]) -> String {
        Base64Codec.encode(bytes, alphabet: .url)
    }

    /// Strict unpadded base64url; nil for any non-canonical input.
    static func base64urlDecode(_ s: String) -> [UInt8]? {
        Base64Codec.decode(s.utf8, alphabet: .url)
    }
}
