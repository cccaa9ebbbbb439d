/// Strict RFC 4648 base64 / base64url codec.
///
/// Decoding rejects whitespace, characters of the other alphabet, wrong padding and
/// non-canonical trailing bits, so every byte string has exactly one accepted encoding.
public enum Base64Codec {
    /// The two RFC 4648 alphabets.
    public enum Alphabet: Sendable {
        /// `A-Z a-z 0-9 + /` with `=` padding (section 4), as used by `x5c`.
        case standard
        /// `A-Z a-z 0-9 - _` without padding (section 5), as used by compact JWS.
        case url
    }

    private static let standardTable = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    private static let urlTable = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    @inline(__always)
    private static func value(of c: UInt8, _ alphabet: Alphabet) -> UInt8? {
        switch c {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"): return c - UInt8(ascii: "A")
        case UInt8(ascii: "a")...UInt8(ascii: "z"): return c - UInt8(ascii: "a") + 26
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0") + 52
        case UInt8(ascii: "+") where alphabet == .standard: return 62
        case UInt8(ascii: "/") where alphabet == .standard: return 63
        case UInt8(ascii: "-") where alphabet == .url: return 62
        case UInt8(ascii: "_") where alphabet == .url: return 63
        default: return nil
        }
    }

    /// Decodes `text` strictly; returns `nil` for any deviation from the canonical encoding.
    ///
    /// `.standard` requires padding to a multiple of four characters; `.url` forbids padding.
    public static func decode<S: Collection>(_ text: S, alphabet: Alphabet) -> [UInt8]? where S.Element == UInt8 {
        var chars = Array(text)
        if alphabet == .standard {
            guard chars.count % 4 == 0 else { return nil }
            var pad = 0
            while pad < 2, let last = chars.last, last == UInt8(ascii: "=") {
                chars.removeLast(); pad += 1
            }
            // A third '=' (or padding that is not needed) is non-canonical.
            if chars.last == UInt8(ascii: "=") { return nil }
            if pad > 0 && (chars.count + pad) % 4 != 0 { return nil }
            if pad == 0 && chars.count % 4 != 0 { return nil }
            if pad == 1 && chars.count % 4 != 3 { return nil }
            if pad == 2 && chars.count % 4 != 2 { return nil }
        }
        let remainder = chars.count % 4
        if remainder == 1 { return nil }
        var out = [UInt8]()
        out.reserveCapacity(chars.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        var lastValue: UInt8 = 0
        for c in chars {
            guard let v = value(of: c, alphabet) else { return nil }
            lastValue = v
            accumulator = (accumulator << 6) | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8((accumulator >> UInt32(bits)) & 0xFF))
            }
        }
        // Non-canonical trailing bits: the unused low bits of the last symbol must be zero.
        switch remainder {
        case 2: if lastValue & 0x0F != 0 { return nil }
        case 3: if lastValue & 0x03 != 0 { return nil }
        default: break
        }
        return out
    }

    /// Encodes `bytes` canonically in the given alphabet (padded for `.standard` only).
    public static func encode<S: Collection>(_ bytes: S, alphabet: Alphabet) -> String where S.Element == UInt8 {
        let table = alphabet == .standard ? standardTable : urlTable
        let input = Array(bytes)
        var out = [UInt8]()
        out.reserveCapacity((input.count + 2) / 3 * 4)
        var i = 0
        while i + 3 <= input.count {
            let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8 | UInt32(input[i + 2])
            out.append(table[Int(n >> 18 & 63)]); out.append(table[Int(n >> 12 & 63)])
            out.append(table[Int(n >> 6 & 63)]); out.append(table[Int(n & 63)])
            i += 3
        }
        let rest = input.count - i
        if rest == 1 {
            let n = UInt32(input[i]) << 16
            out.append(table[Int(n >> 18 & 63)]); out.append(table[Int(n >> 12 & 63)])
            if alphabet == .standard { out.append(UInt8(ascii: "=")); out.append(UInt8(ascii: "=")) }
        } else if rest == 2 {
            let n = UInt32(input[i]) << 16 | UInt32(input[i + 1]) << 8
            out.append(table[Int(n >> 18 & 63)]); out.append(table[Int(n >> 12 & 63)])
            out.append(table[Int(n >> 6 & 63)])
            if alphabet == .standard { out.append(UInt8(ascii: "=")) }
        }
        return String(decoding: out, as: UTF8.self)
    }
}
