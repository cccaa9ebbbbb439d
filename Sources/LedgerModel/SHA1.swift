/// SHA-1 (FIPS 180-4), used only to derive name-based UUIDv5 identifiers.
public enum SHA1 {
    /// A digest as its five big-endian words.
    public typealias State = (UInt32, UInt32, UInt32, UInt32, UInt32)

    /// A SHA-1 to name UUIDv5 ids with: `portable`, this file's, or one a platform supplies
    /// (the server's goes through OpenSSL, which uses the CPU's SHA instructions). Any
    /// implementation must give the same five words for every message.
    public struct Function: Sendable {
        public let words: @Sendable (UnsafeRawBufferPointer) -> State
        public init(_ words: @escaping @Sendable (UnsafeRawBufferPointer) -> State) { self.words = words }
        /// The SHA-1 written here in Swift (every platform).
        public static let portable = Function { SHA1.words($0) }
    }

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

    /// The digest of `message` as its five big-endian words. Whole blocks are read where
    /// they lie; the last part, its padding (as `MerkleDamgard.padded`) and the schedule
    /// live on the stack.
    public static func words(_ message: UnsafeRawBufferPointer) -> State {
        var h: State = (0x67452301, 0xEFCDAB89, 0x98BADCFE, 0x10325476, 0xC3D2E1F0)
        let whole = message.count / 64 * 64
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 16) { schedule in
            let w = schedule.baseAddress!
            if let m = message.baseAddress {
                var offset = 0
                while offset < whole {
                    compress(&h, m + offset, w)
                    offset += 64
                }
            }
            // The rest of the message, 0x80, zeros and the length: one block, or two when
            // fewer than 9 bytes are left in the first.
            let rest = message.count - whole
            let tail = rest < 56 ? 64 : 128
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { buffer in
                let base = buffer.baseAddress!
                if rest > 0 { base.update(from: message.baseAddress!.advanced(by: whole).assumingMemoryBound(to: UInt8.self), count: rest) }
                base[rest] = 0x80
                (base + rest + 1).update(repeating: 0, count: tail - 8 - rest - 1)
                let bitLength = UInt64(message.count) &* 8
                for i in 0..<8 { base[tail - 1 - i] = UInt8(truncatingIfNeeded: bitLength >> (UInt64(i) * 8)) }
                compress(&h, UnsafeRawPointer(base), w)
                if tail == 128 { compress(&h, UnsafeRawPointer(base + 64), w) }
            }
        }
        return h
    }

    @inline(__always)
    private static func rol(_ x: UInt32, _ n: UInt32) -> UInt32 { (x << n) | (x >> (32 - n)) }

    /// Schedule word `i` (16 ≤ i < 80), kept in a window of 16 words at `i mod 16`. Called
    /// with constant `i` only, so the window's offsets are constants too.
    @inline(__always)
    private static func next(_ w: UnsafeMutablePointer<UInt32>, _ i: Int) -> UInt32 {
        let x = rol(w[(i - 3) & 15] ^ w[(i - 8) & 15] ^ w[(i - 14) & 15] ^ w[i & 15], 1)
        w[i & 15] = x
        return x
    }

    // The four kinds of rounds. Each adds into `e` and rotates `b`; the callers rename the
    // five words from round to round instead of moving them.
    @inline(__always)
    private static func r1(_ a: UInt32, _ b: inout UInt32, _ c: UInt32, _ d: UInt32, _ e: inout UInt32, _ x: UInt32) {
        e = e &+ rol(a, 5) &+ (d ^ (b & (c ^ d))) &+ 0x5A827999 &+ x
        b = rol(b, 30)
    }

    @inline(__always)
    private static func r2(_ a: UInt32, _ b: inout UInt32, _ c: UInt32, _ d: UInt32, _ e: inout UInt32, _ x: UInt32) {
        e = e &+ rol(a, 5) &+ (b ^ c ^ d) &+ 0x6ED9EBA1 &+ x
        b = rol(b, 30)
    }

    @inline(__always)
    private static func r3(_ a: UInt32, _ b: inout UInt32, _ c: UInt32, _ d: UInt32, _ e: inout UInt32, _ x: UInt32) {
        e = e &+ rol(a, 5) &+ ((b & c) | (d & (b | c))) &+ 0x8F1BBCDC &+ x
        b = rol(b, 30)
    }

    @inline(__always)
    private static func r4(_ a: UInt32, _ b: inout UInt32, _ c: UInt32, _ d: UInt32, _ e: inout UInt32, _ x: UInt32) {
        e = e &+ rol(a, 5) &+ (b ^ c ^ d) &+ 0xCA62C1D6 &+ x
        b = rol(b, 30)
    }

    /// One 64-byte block at `block` into `h`, with `w` (16 words) for the schedule. The 80
    /// rounds are written out: every schedule offset is a constant and no word is moved.
    private static func compress(_ h: inout State, _ block: UnsafeRawPointer, _ w: UnsafeMutablePointer<UInt32>) {
        for i in 0..<16 { w[i] = UInt32(bigEndian: block.loadUnaligned(fromByteOffset: 4 * i, as: UInt32.self)) }
        var (a, b, c, d, e) = h
        r1(a, &b, c, d, &e, w[0]); r1(e, &a, b, c, &d, w[1]); r1(d, &e, a, b, &c, w[2]); r1(c, &d, e, a, &b, w[3]); r1(b, &c, d, e, &a, w[4])
        r1(a, &b, c, d, &e, w[5]); r1(e, &a, b, c, &d, w[6]); r1(d, &e, a, b, &c, w[7]); r1(c, &d, e, a, &b, w[8]); r1(b, &c, d, e, &a, w[9])
        r1(a, &b, c, d, &e, w[10]); r1(e, &a, b, c, &d, w[11]); r1(d, &e, a, b, &c, w[12]); r1(c, &d, e, a, &b, w[13]); r1(b, &c, d, e, &a, w[14])
        r1(a, &b, c, d, &e, w[15]); r1(e, &a, b, c, &d, next(w, 16)); r1(d, &e, a, b, &c, next(w, 17)); r1(c, &d, e, a, &b, next(w, 18)); r1(b, &c, d, e, &a, next(w, 19))
        r2(a, &b, c, d, &e, next(w, 20)); r2(e, &a, b, c, &d, next(w, 21)); r2(d, &e, a, b, &c, next(w, 22)); r2(c, &d, e, a, &b, next(w, 23)); r2(b, &c, d, e, &a, next(w, 24))
        r2(a, &b, c, d, &e, next(w, 25)); r2(e, &a, b, c, &d, next(w, 26)); r2(d, &e, a, b, &c, next(w, 27)); r2(c, &d, e, a, &b, next(w, 28)); r2(b, &c, d, e, &a, next(w, 29))
        r2(a, &b, c, d, &e, next(w, 30)); r2(e, &a, b, c, &d, next(w, 31)); r2(d, &e, a, b, &c, next(w, 32)); r2(c, &d, e, a, &b, next(w, 33)); r2(b, &c, d, e, &a, next(w, 34))
        r2(a, &b, c, d, &e, next(w, 35)); r2(e, &a, b, c, &d, next(w, 36)); r2(d, &e, a, b, &c, next(w, 37)); r2(c, &d, e, a, &b, next(w, 38)); r2(b, &c, d, e, &a, next(w, 39))
        r3(a, &b, c, d, &e, next(w, 40)); r3(e, &a, b, c, &d, next(w, 41)); r3(d, &e, a, b, &c, next(w, 42)); r3(c, &d, e, a, &b, next(w, 43)); r3(b, &c, d, e, &a, next(w, 44))
        r3(a, &b, c, d, &e, next(w, 45)); r3(e, &a, b, c, &d, next(w, 46)); r3(d, &e, a, b, &c, next(w, 47)); r3(c, &d, e, a, &b, next(w, 48)); r3(b, &c, d, e, &a, next(w, 49))
        r3(a, &b, c, d, &e, next(w, 50)); r3(e, &a, b, c, &d, next(w, 51)); r3(d, &e, a, b, &c, next(w, 52)); r3(c, &d, e, a, &b, next(w, 53)); r3(b, &c, d, e, &a, next(w, 54))
        r3(a, &b, c, d, &e, next(w, 55)); r3(e, &a, b, c, &d, next(w, 56)); r3(d, &e, a, b, &c, next(w, 57)); r3(c, &d, e, a, &b, next(w, 58)); r3(b, &c, d, e, &a, next(w, 59))
        r4(a, &b, c, d, &e, next(w, 60)); r4(e, &a, b, c, &d, next(w, 61)); r4(d, &e, a, b, &c, next(w, 62)); r4(c, &d, e, a, &b, next(w, 63)); r4(b, &c, d, e, &a, next(w, 64))
        r4(a, &b, c, d, &e, next(w, 65)); r4(e, &a, b, c, &d, next(w, 66)); r4(d, &e, a, b, &c, next(w, 67)); r4(c, &d, e, a, &b, next(w, 68)); r4(b, &c, d, e, &a, next(w, 69))
        r4(a, &b, c, d, &e, next(w, 70)); r4(e, &a, b, c, &d, next(w, 71)); r4(d, &e, a, b, &c, next(w, 72)); r4(c, &d, e, a, &b, next(w, 73)); r4(b, &c, d, e, &a, next(w, 74))
        r4(a, &b, c, d, &e, next(w, 75)); r4(e, &a, b, c, &d, next(w, 76)); r4(d, &e, a, b, &c, next(w, 77)); r4(c, &d, e, a, &b, next(w, 78)); r4(b, &c, d, e, &a, next(w, 79))
        h = (h.0 &+ a, h.1 &+ b, h.2 &+ c, h.3 &+ d, h.4 &+ e)
    }
}
