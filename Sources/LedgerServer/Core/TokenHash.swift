import COpenSSL
import Foundation
import StoreKitJWS

/// Device token secrets: `kl_` + 43 base64url characters (32 random bytes).
/// The database stores only their SHA-256; a running server keeps the secrets it has seen
/// in memory as the keys of its token cache (`TokenKey`). Comparisons are constant-time.
enum TokenSecret {
    static let prefix = "kl_"
    /// `kl_` and 43 base64url characters.
    static let length = 46

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
        guard s.utf8.count == length, s.hasPrefix(prefix) else { return false }
        return s.utf8.dropFirst(3).allSatisfy(isBase64URL)
    }

    /// The secret in the usual header, `Bearer kl_…` exactly (any case of "Bearer", one
    /// space), read straight from the header's bytes; nil for anything else, which the
    /// caller then takes apart the general way.
    static func bearerKey(_ header: String) -> TokenKey? {
        var header = header
        return header.withUTF8 { b -> TokenKey? in
            let scheme = 7  // "bearer "
            guard b.count == scheme + length else { return nil }
            // Compared with the literals' bytes in place (no iterator over a string's UTF-8).
            let bearer: StaticString = "bearer ", kl: StaticString = "kl_"
            for i in 0..<scheme where b[i] | (i < 6 ? 0x20 : 0) != bearer.utf8Start[i] { return nil }
            for i in 0..<kl.utf8CodeUnitCount where b[scheme + i] != kl.utf8Start[i] { return nil }
            for i in (scheme + prefix.utf8.count)..<b.count where !isBase64URL(b[i]) { return nil }
            return TokenKey(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(b)[scheme...]))
        }
    }

    private static func isBase64URL(_ c: UInt8) -> Bool {
        (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || (c >= 48 && c <= 57) || c == 45 || c == 95
    }

    static func sha256(_ s: some StringProtocol) -> [UInt8] {
        Array(s.utf8).withUnsafeBytes { digest($0) }
    }

    /// SHA-256 through a digest context each thread keeps (`kidledger_sha256`): OpenSSL's
    /// one-shot `SHA256()` looks the algorithm up in the provider on every call, which
    /// costs more than hashing a token, and a pool of contexts shared by the threads that
    /// serve requests is a lock they queue on.
    fileprivate static func digest(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            count = 32
            if kidledger_sha256(input.baseAddress, input.count, out.baseAddress) != 1 {
                _ = SHA256(input.baseAddress?.assumingMemoryBound(to: UInt8.self), input.count, out.baseAddress)
            }
        }
    }

    /// A well-formed token secret (`isWellFormed`) held as its 46 bytes, the key of the
    /// token lookups a server keeps in memory (`ReadCache`): a cached request finds its
    /// caller without hashing the secret (SHA-256 is about 3,000 instructions, the most
    /// of an authenticated cached read's own work after parsing). The database keeps only
    /// the SHA-256 (`sha256`, computed on a miss); the secrets stay in this process's
    /// memory, as the requests that carried them did, for as long as their lookup is
    /// kept. Equality compares every byte, whatever the first difference.
    struct TokenKey: Hashable, Sendable {
        // 46 bytes in six words, the last two bytes zero.
        private let w0, w1, w2, w3, w4, w5: UInt64

        /// From a secret's 46 bytes.
        init(_ secret: UnsafeRawBufferPointer) {
            precondition(secret.count == TokenSecret.length)
            var words: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0)
            withUnsafeMutableBytes(of: &words) { $0.copyMemory(from: secret) }
            (w0, w1, w2, w3, w4, w5) = words
        }

        /// The key of `secret`, nil when it is not well-formed.
        init?(secret: some StringProtocol) {
            guard TokenSecret.isWellFormed(Substring(secret)) else { return nil }
            var s = String(secret)
            self = s.withUTF8 { TokenKey(UnsafeRawBufferPointer($0)) }
        }

        /// The SHA-256 of the secret, as the database stores it.
        var sha256: [UInt8] {
            withUnsafeBytes(of: (w0, w1, w2, w3, w4, w5)) {
                TokenSecret.digest(UnsafeRawBufferPointer(rebasing: $0[..<TokenSecret.length]))
            }
        }

        /// Bytes 8–15: random characters of the secret (the first word starts with `kl_`).
        func hash(into hasher: inout Hasher) { hasher.combine(w1) }

        static func == (a: TokenKey, b: TokenKey) -> Bool {
            ((a.w0 ^ b.w0) | (a.w1 ^ b.w1) | (a.w2 ^ b.w2) | (a.w3 ^ b.w3) | (a.w4 ^ b.w4) | (a.w5 ^ b.w5)) == 0
        }
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
