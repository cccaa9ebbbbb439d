import LedgerCore

/// The secrets requests carry: read from the `Authorization` header, and kept as the keys
/// of the token cache.
extension TokenSecret {
    /// The secret in the usual header, `Bearer kl_…` exactly (any case of "Bearer", one
    /// space), read straight from the header's bytes; nil for anything else, which the
    /// caller then takes apart the general way.
    static func bearerKey(_ header: String) -> TokenKey? {
        var header = header
        return header.withUTF8 { b -> TokenKey? in
            // Literal sizes (`length` and `prefix` are another module's globals, each read
            // through an accessor), and the characters checked here (a call each otherwise).
            let scheme = 7  // "bearer "
            let kl: StaticString = "kl_"
            guard b.count == scheme + 46 else { return nil }
            // Compared with the literals' bytes in place (no iterator over a string's UTF-8).
            let bearer: StaticString = "bearer "
            for i in 0..<scheme where b[i] | (i < 6 ? 0x20 : 0) != bearer.utf8Start[i] { return nil }
            for i in 0..<3 where b[scheme + i] != kl.utf8Start[i] { return nil }
            for i in (scheme + 3)..<b.count {
                let c = b[i], letter = c | 0x20
                // base64url: A–Z, a–z, 0–9, "-", "_".
                guard (letter >= 97 && letter <= 122) || (c >= 48 && c <= 57) || c == 45 || c == 95 else { return nil }
            }
            return TokenKey(UnsafeRawBufferPointer(rebasing: UnsafeRawBufferPointer(b)[scheme...]))
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
}
