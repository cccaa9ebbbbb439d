/// SHA-1 (FIPS 180-4), used only to derive name-based UUIDv5 identifiers.
enum SHA1 {
    static func digest(_ message: [UInt8]) -> [UInt8] {
        let h = message.withUnsafeBytes { words($0) }
        var out = [UInt8]()
        out.reserveCapacity(20)
        for v in [h.0, h.1, h.2, h.3, h.4] {
            out.append(UInt8(v >> 24)); out.append(UInt8(truncatingIfNeeded: v >> 16))
            out.append(UInt8(truncatingIfNeeded: v >> 8)); out.append(UInt8(truncatingIfNeeded: v))
        }
        return out
    }

    /// The digest of `message` as its five big-endian words. The padded message (padding
    /// as `MerkleDamgard.padded`) and the 80-word schedule live on the stack.
    static func words(_ message: UnsafeRawBufferPointer) -> (UInt32, UInt32, UInt32, UInt32, UInt32) {
        let padded = (message.count + 8) / 64 * 64 + 64
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: padded) { data in
            let base = data.baseAddress!
            if let m = message.baseAddress, message.count > 0 {
                base.update(from: m.assumingMemoryBound(to: UInt8.self), count: message.count)
            }
            base[message.count] = 0x80
            (base + message.count + 1).update(repeating: 0, count: padded - 8 - message.count - 1)
            let bitLength = UInt64(message.count) &* 8
            for i in 0..<8 { base[padded - 1 - i] = UInt8(truncatingIfNeeded: bitLength >> (UInt64(i) * 8)) }
            var h: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0)
            withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 80) { wb in
                let w = wb.baseAddress!
                var chunk = 0
                while chunk < padded {
                    for i in 0..<16 {
                        let b = chunk + i * 4
                        w[i] = UInt32(base[b]) << 24 | UInt32(base[b + 1]) << 16 | UInt32(base[b + 2]) << 8 | UInt32(base[b + 3])
                    }
                    for i in 16..<80 {
                        let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
                        w[i] = (x << 1) | (x >> 31)
                    }
                    var (a, b, c, d, e) = h
                    // The four kinds of rounds in loops of their own (no switch per round).
                    for i in 0..<20 {
                        let t = ((a << 5) | (a >> 27)) &+ ((b & c) | (~b & d)) &+ e &+ 0x5A827999 &+ w[i]
                        e = d; d = c; c = (b << 30) | (b >> 2); b = a; a = t
                    }
                    for i in 20..<40 {
                        let t = ((a << 5) | (a >> 27)) &+ (b ^ c ^ d) &+ e &+ 0x6ED9EBA1 &+ w[i]
                        e = d; d = c; c = (b << 30) | (b >> 2); b = a; a = t
                    }
                    for i in 40..<60 {
                        let t = ((a << 5) | (a >> 27)) &+ ((b & c) | (b & d) | (c & d)) &+ e &+ 0x8F1BBCDC &+ w[i]
                        e = d; d = c; c = (b << 30) | (b >> 2); b = a; a = t
                    }
                    for i in 60..<80 {
                        let t = ((a << 5) | (a >> 27)) &+ (b ^ c ^ d) &+ e &+ 0xCA62C1D6 &+ w[i]
                        e = d; d = c; c = (b << 30) | (b >> 2); b = a; a = t
                    }
                    h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
                    chunk += 64
                }
            }
            return h
        }
    }
}
