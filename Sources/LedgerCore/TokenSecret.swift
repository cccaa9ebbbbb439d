import COpenSSL
import Foundation
import StoreKitJWS

/// Device token secrets: `kl_` + 43 base64url characters (32 random bytes).
/// The database stores only their SHA-256 (a running server keeps the secrets it has seen
/// in memory as the keys of its token cache, `TokenSecret.TokenKey`). Comparisons are
/// constant-time.
package enum TokenSecret {
    package static let prefix = "kl_"
    /// `kl_` and 43 base64url characters.
    package static let length = 46

    package static func generate() -> String {
        var bytes = [UInt8](repeating: 0, count: 32)
        if RAND_bytes(&bytes, 32) != 1 {
            var g = SystemRandomNumberGenerator()
            for i in 0..<32 { bytes[i] = UInt8.random(in: 0...255, using: &g) }
        }
        return prefix + base64url(bytes)
    }

    /// True when `s` has the shape of a token secret.
    package static func isWellFormed(_ s: Substring) -> Bool {
        guard s.utf8.count == length, s.hasPrefix(prefix) else { return false }
        return s.utf8.dropFirst(3).allSatisfy(isBase64URL)
    }

    @inlinable package static func isBase64URL(_ c: UInt8) -> Bool {
        (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c == 45 || c == 95
    }

    package static func sha256(_ s: some StringProtocol) -> [UInt8] {
        Array(s.utf8).withUnsafeBytes { digest($0) }
    }

    /// SHA-256 through a digest context each thread keeps (`kidledger_sha256`): OpenSSL's
    /// one-shot `SHA256()` looks the algorithm up in the provider on every call, which
    /// costs more than hashing a token, and a pool of contexts shared by the threads that
    /// serve requests is a lock they queue on.
    package static func digest(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            count = 32
            if kidledger_sha256(input.baseAddress, input.count, out.baseAddress) != 1 {
                _ = SHA256(input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, out.baseAddress)
            }
        }
    }

    @usableFromInline package static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        return CRYPTO_memcmp(a, b, a.count) == 0
    }

    /// Unpadded base64url (the strict codec the JWS verifier uses).
    package static func base64url(_ bytes: [UInt8]) -> String {
        Base64Codec.encode(bytes, alphabet: .url)
    }

    /// Strict unpadded base64url; nil for any non-canonical input.
    package static func base64urlDecode(_ s: String) -> [UInt8]? {
        Base64Codec.decode(s.utf8, alphabet: .url)
    }
}
