/// SHA-1 (FIPS 180-4), used only to derive name-based UUIDv5 identifiers.
enum SHA1 {
    static func digest(_ message: [UInt8]) -> [UInt8] {
        var h: (UInt32, UInt32, UInt32, UInt32, UInt32) = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0)
        let data = MerkleDamgard.padded(message)
        // The 80-word schedule lives on the stack (it was a heap array per call).
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 80) { w in
            data.withUnsafeBufferPointer { bytes in
                for chunk in stride(from: 0, to: bytes.count, by: 64) {
                    for i in 0..<16 {
                        let b = chunk + i * 4
                        w[i] = UInt32(bytes[b]) << 24 | UInt32(bytes[b + 1]) << 16 | UInt32(bytes[b + 2]) << 8 | UInt32(bytes[b + 3])
                    }
                    for i in 16..<80 {
                        let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
                        w[i] = (x << 1) | (x >> 31)
                    }
                    var (a, b, c, d, e) = h
                    for i in 0..<80 {
                        let f: UInt32, k: UInt32
                        switch i {
                        case 0..<20: f = (b & c) | (~b & d); k = 0x5A827999
                        case 20..<40: f = b ^ c ^ d; k = 0x6ED9EBA1
                        case 40..<60: f = (b & c) | (b & d) | (c & d); k = 0x8F1BBCDC
                        default: f = b ^ c ^ d; k = 0xCA62C1D6
                        }
                        let temp = ((a << 5) | (a >> 27)) &+ f &+ e &+ k &+ w[i]
                        e = d; d = c; c = (b << 30) | (b >> 2); b = a; a = temp
                    }
                    h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
                }
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(20)
        for v in [h.0, h.1, h.2, h.3, h.4] {
            out.append(UInt8(v >> 24)); out.append(UInt8(truncatingIfNeeded: v >> 16))
            out.append(UInt8(truncatingIfNeeded: v >> 8)); out.append(UInt8(truncatingIfNeeded: v))
        }
        return out
    }
}
