import COpenSSL

/// A short secret a person reads, types or says aloud: Crockford base32 characters
/// (`0-9 A-Z` without `I L O U`, 5 bits each), shown in groups of four joined by hyphens
/// (`7KQ2-M9XD-4TRB`). Read back case-insensitively, hyphens and spaces ignored, and, as
/// Crockford's alphabet intends, `I`/`L` taken for `1` and `O` for `0`.
///
/// Link codes are 12 characters (60 bits), recovery codes 16 (80 bits). The database keeps
/// only the SHA-256 of a code's canonical form (`hash`), as it does for bearer tokens: the
/// codes carry enough entropy that no slower hash is needed.
package struct HumanCode: Sendable, Equatable {
    /// The canonical characters: upper case, no separators.
    package let canonical: String

    package static let alphabet: [UInt8] = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".utf8)

    /// A new code of `length` characters from the system's cryptographic generator
    /// (OpenSSL's `RAND_bytes`; `SystemRandomNumberGenerator`, which reads `getrandom`,
    /// should it fail).
    package static func generate(length: Int) -> HumanCode {
        var bytes = [UInt8](repeating: 0, count: length)
        if RAND_bytes(&bytes, Int32(length)) != 1 {
            var g = SystemRandomNumberGenerator()
            for i in 0..<length { bytes[i] = UInt8.random(in: 0...255, using: &g) }
        }
        // 256 is a multiple of 32: the low five bits of a uniform byte are uniform.
        return HumanCode(canonical: String(decoding: bytes.map { alphabet[Int($0 & 31)] }, as: UTF8.self))
    }

    /// The code a person typed, when it is `length` characters of the alphabet once
    /// hyphens and spaces are dropped; nil otherwise.
    package init?(reading text: String, length: Int) {
        var out: [UInt8] = []
        out.reserveCapacity(length)
        for c in text.utf8 {
            if c == UInt8(ascii: "-") || c == UInt8(ascii: " ") { continue }
            guard out.count < length, let v = Self.value(of: c) else { return nil }
            out.append(Self.alphabet[v])
        }
        guard out.count == length else { return nil }
        canonical = String(decoding: out, as: UTF8.self)
    }

    private init(canonical: String) { self.canonical = canonical }

    /// The 5-bit value a typed character stands for (nil: not a code character).
    package static func value(of c: UInt8) -> Int? {
        let u = c >= 97 && c <= 122 ? c - 32 : c
        switch u {
        case UInt8(ascii: "I"), UInt8(ascii: "L"): return 1
        case UInt8(ascii: "O"): return 0
        default: return alphabet.firstIndex(of: u)
        }
    }

    /// As shown: groups of four characters joined by hyphens.
    package var display: String {
        var out = ""
        for (i, c) in canonical.enumerated() {
            if i > 0 && i % 4 == 0 { out.append("-") }
            out.append(c)
        }
        return out
    }

    /// What the database keeps: the SHA-256 of the canonical form.
    package var hash: [UInt8] { TokenSecret.sha256(canonical) }

    /// The first `count` characters, which a link code's failed redemptions are counted
    /// under (see `LinkCodeRecord.bucket`).
    package func prefix(_ count: Int) -> String { String(canonical.prefix(count)) }
}
