/// ECDSA P-256 signature verification (FIPS 186-4, SEC 1 §4.1.4) in portable Swift, for
/// devices that check an entitlement token where no crypto library can be linked (the SDK
/// on Linux). Verification only: every input is public, so nothing here needs to run in
/// constant time. Numbers are four little-endian 64-bit limbs; field and scalar arithmetic
/// use Montgomery multiplication.
public struct P256PublicKey: Sendable, Equatable {
    let x: [UInt64]
    let y: [UInt64]

    /// The key with affine coordinates `x`, `y` (32 bytes each, big-endian, as a JWK
    /// carries them); nil unless the point is on the curve.
    public init?(x: [UInt8], y: [UInt8]) {
        guard x.count == 32, y.count == 32 else { return nil }
        let xl = Limbs.from(bigEndian: x), yl = Limbs.from(bigEndian: y)
        let f = Curve.field
        guard Limbs.less(xl, f.m), Limbs.less(yl, f.m) else { return nil }
        // y² = x³ - 3x + b
        let xm = f.toMont(xl), ym = f.toMont(yl)
        let rhs = f.add(f.sub(f.mul(f.mul(xm, xm), xm), f.add(f.add(xm, xm), xm)), Curve.bMont)
        guard f.mul(ym, ym) == rhs else { return nil }
        self.x = xl
        self.y = yl
    }

    /// Whether `signature` (raw `r ‖ s`, 64 bytes) signs `digest` (SHA-256, 32 bytes) under this key.
    public func isValidSignature(_ signature: [UInt8], digest: [UInt8]) -> Bool {
        guard signature.count == 64, digest.count == 32 else { return false }
        let n = Curve.order
        let r = Limbs.from(bigEndian: Array(signature[0..<32])), s = Limbs.from(bigEndian: Array(signature[32..<64]))
        guard !Limbs.isZero(r), !Limbs.isZero(s), Limbs.less(r, n.m), Limbs.less(s, n.m) else { return false }
        var e = Limbs.from(bigEndian: digest)
        if !Limbs.less(e, n.m) { e = Limbs.sub(e, n.m).0 }
        let w = n.inverse(n.toMont(s))
        let u1 = n.fromMont(n.mul(n.toMont(e), w)), u2 = n.fromMont(n.mul(n.toMont(r), w))
        let f = Curve.field
        let q = Jacobian(x: f.toMont(x), y: f.toMont(y), z: f.one)
        let sum = Curve.generator.add(q)
        var acc = Jacobian.infinity
        for bit in stride(from: 255, through: 0, by: -1) {
            acc = acc.double()
            switch (Limbs.bit(u1, bit), Limbs.bit(u2, bit)) {
            case (true, true): acc = acc.add(sum)
            case (true, false): acc = acc.add(Curve.generator)
            case (false, true): acc = acc.add(q)
            case (false, false): break
            }
        }
        guard !acc.isInfinity else { return false }
        let zInverse = f.inverse(acc.z)
        var affineX = f.fromMont(f.mul(acc.x, f.mul(zInverse, zInverse)))
        if !Limbs.less(affineX, n.m) { affineX = Limbs.sub(affineX, n.m).0 }
        return affineX == r
    }
}

/// 256-bit numbers as four little-endian limbs.
enum Limbs {
    static func from(bigEndian bytes: [UInt8]) -> [UInt64] {
        (0..<4).map { limb in
            (0..<8).reduce(UInt64(0)) { v, i in v << 8 | UInt64(bytes[(3 - limb) * 8 + i]) }
        }
    }

    static func isZero(_ a: [UInt64]) -> Bool { a.allSatisfy { $0 == 0 } }

    static func less(_ a: [UInt64], _ b: [UInt64]) -> Bool {
        for i in (0..<4).reversed() where a[i] != b[i] { return a[i] < b[i] }
        return false
    }

    static func bit(_ a: [UInt64], _ i: Int) -> Bool { a[i / 64] >> UInt64(i % 64) & 1 == 1 }

    /// a + b and the carry out.
    static func add(_ a: [UInt64], _ b: [UInt64]) -> ([UInt64], Bool) {
        var out = [UInt64](repeating: 0, count: 4)
        var carry = false
        for i in 0..<4 {
            let (s1, o1) = a[i].addingReportingOverflow(b[i])
            let (s2, o2) = s1.addingReportingOverflow(carry ? 1 : 0)
            out[i] = s2
            carry = o1 || o2
        }
        return (out, carry)
    }

    /// a - b and the borrow out.
    static func sub(_ a: [UInt64], _ b: [UInt64]) -> ([UInt64], Bool) {
        var out = [UInt64](repeating: 0, count: 4)
        var borrow = false
        for i in 0..<4 {
            let (d1, o1) = a[i].subtractingReportingOverflow(b[i])
            let (d2, o2) = d1.subtractingReportingOverflow(borrow ? 1 : 0)
            out[i] = d2
            borrow = o1 || o2
        }
        return (out, borrow)
    }
}

/// Arithmetic modulo an odd 256-bit `m` with values in Montgomery form (a·2²⁵⁶ mod m).
struct Modulus: Sendable {
    let m: [UInt64]
    /// -m⁻¹ mod 2⁶⁴.
    let mPrime: UInt64
    /// 2⁵¹² mod m, to enter Montgomery form.
    let r2: [UInt64]
    /// 1 in Montgomery form.
    let one: [UInt64]

    init(_ m: [UInt64]) {
        self.m = m
        var inverse: UInt64 = 1
        for _ in 0..<7 { inverse = inverse &* (2 &- m[0] &* inverse) }
        mPrime = 0 &- inverse
        var x: [UInt64] = [1, 0, 0, 0]
        var rModM: [UInt64] = []
        for i in 1...512 {
            let (sum, carry) = Limbs.add(x, x)
            x = carry || !Limbs.less(sum, m) ? Limbs.sub(sum, m).0 : sum
            if i == 256 { rModM = x }
        }
        r2 = x
        one = rModM
    }

    func add(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        let (sum, carry) = Limbs.add(a, b)
        return carry || !Limbs.less(sum, m) ? Limbs.sub(sum, m).0 : sum
    }

    func sub(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        let (difference, borrow) = Limbs.sub(a, b)
        return borrow ? Limbs.add(difference, m).0 : difference
    }

    /// a·b·2⁻²⁵⁶ mod m (CIOS Montgomery multiplication).
    func mul(_ a: [UInt64], _ b: [UInt64]) -> [UInt64] {
        /// x·y + c + d as (high, low); never overflows 128 bits.
        func mac(_ x: UInt64, _ y: UInt64, _ c: UInt64, _ d: UInt64) -> (UInt64, UInt64) {
            let p = x.multipliedFullWidth(by: y)
            let (l1, o1) = p.low.addingReportingOverflow(c)
            let (l2, o2) = l1.addingReportingOverflow(d)
            return (p.high &+ (o1 ? 1 : 0) &+ (o2 ? 1 : 0), l2)
        }
        var t = [UInt64](repeating: 0, count: 6)
        for i in 0..<4 {
            var c: UInt64 = 0
            for j in 0..<4 { (c, t[j]) = mac(a[j], b[i], t[j], c) }
            let (s4, o4) = t[4].addingReportingOverflow(c)
            t[4] = s4
            t[5] = o4 ? 1 : 0
            let q = t[0] &* mPrime
            (c, _) = mac(q, m[0], t[0], 0)
            for j in 1..<4 { (c, t[j - 1]) = mac(q, m[j], t[j], c) }
            let (s3, o3) = t[4].addingReportingOverflow(c)
            t[3] = s3
            t[4] = t[5] &+ (o3 ? 1 : 0)
        }
        let result = Array(t[0..<4])
        return t[4] != 0 || !Limbs.less(result, m) ? Limbs.sub(result, m).0 : result
    }

    func toMont(_ a: [UInt64]) -> [UInt64] { mul(a, r2) }
    func fromMont(_ a: [UInt64]) -> [UInt64] { mul(a, [1, 0, 0, 0]) }

    /// a⁻¹ for a in Montgomery form (Fermat: a^(m-2); m is prime).
    func inverse(_ a: [UInt64]) -> [UInt64] {
        let exponent = Limbs.sub(m, [2, 0, 0, 0]).0
        var result = one
        for bit in stride(from: 255, through: 0, by: -1) {
            result = mul(result, result)
            if Limbs.bit(exponent, bit) { result = mul(result, a) }
        }
        return result
    }
}

/// P-256's parameters.
enum Curve {
    static let field = Modulus([0xFFFF_FFFF_FFFF_FFFF, 0x0000_0000_FFFF_FFFF, 0x0000_0000_0000_0000, 0xFFFF_FFFF_0000_0001])
    static let order = Modulus([0xF3B9_CAC2_FC63_2551, 0xBCE6_FAAD_A717_9E84, 0xFFFF_FFFF_FFFF_FFFF, 0xFFFF_FFFF_0000_0000])
    static let bMont = field.toMont([0x3BCE_3C3E_27D2_604B, 0x651D_06B0_CC53_B0F6, 0xB3EB_BD55_7698_86BC, 0x5AC6_35D8_AA3A_93E7])
    static let generator = Jacobian(
        x: field.toMont([0xF4A1_3945_D898_C296, 0x7703_7D81_2DEB_33A0, 0xF8BC_E6E5_63A4_40F2, 0x6B17_D1F2_E12C_4247]),
        y: field.toMont([0xCBB6_4068_37BF_51F5, 0x2BCE_3357_6B31_5ECE, 0x8EE7_EB4A_7C0F_9E16, 0x4FE3_42E2_FE1A_7F9B]),
        z: field.one)
}

/// A point in Jacobian coordinates (X/Z², Y/Z³) over the field, Montgomery form; Z = 0 is infinity.
struct Jacobian {
    var x: [UInt64], y: [UInt64], z: [UInt64]

    static let infinity = Jacobian(x: Curve.field.one, y: Curve.field.one, z: [0, 0, 0, 0])
    var isInfinity: Bool { Limbs.isZero(z) }

    /// 2P with a = -3 ("dbl-2001-b").
    func double() -> Jacobian {
        let f = Curve.field
        if isInfinity || Limbs.isZero(y) { return .infinity }
        let delta = f.mul(z, z), gamma = f.mul(y, y), beta = f.mul(x, gamma)
        let t = f.mul(f.sub(x, delta), f.add(x, delta))
        let alpha = f.add(f.add(t, t), t)
        let beta4 = f.add(f.add(beta, beta), f.add(beta, beta))
        let x3 = f.sub(f.mul(alpha, alpha), f.add(beta4, beta4))
        let yz = f.add(y, z)
        let z3 = f.sub(f.sub(f.mul(yz, yz), gamma), delta)
        let gamma2 = f.mul(gamma, gamma)
        let gamma8 = f.add(f.add(f.add(gamma2, gamma2), f.add(gamma2, gamma2)), f.add(f.add(gamma2, gamma2), f.add(gamma2, gamma2)))
        let y3 = f.sub(f.mul(alpha, f.sub(beta4, x3)), gamma8)
        return Jacobian(x: x3, y: y3, z: z3)
    }

    /// P + Q ("add-2007-bl"), doubling when P = Q.
    func add(_ q: Jacobian) -> Jacobian {
        if isInfinity { return q }
        if q.isInfinity { return self }
        let f = Curve.field
        let z1z1 = f.mul(z, z), z2z2 = f.mul(q.z, q.z)
        let u1 = f.mul(x, z2z2), u2 = f.mul(q.x, z1z1)
        let s1 = f.mul(f.mul(y, q.z), z2z2), s2 = f.mul(f.mul(q.y, z), z1z1)
        let h = f.sub(u2, u1)
        let rHalf = f.sub(s2, s1)
        if Limbs.isZero(h) { return Limbs.isZero(rHalf) ? double() : .infinity }
        let h2 = f.add(h, h)
        let i = f.mul(h2, h2), j = f.mul(h, i)
        let r = f.add(rHalf, rHalf)
        let v = f.mul(u1, i)
        let x3 = f.sub(f.sub(f.mul(r, r), j), f.add(v, v))
        let s1j = f.mul(s1, j)
        let y3 = f.sub(f.mul(r, f.sub(v, x3)), f.add(s1j, s1j))
        let zz = f.add(z, q.z)
        let z3 = f.mul(f.sub(f.sub(f.mul(zz, zz), z1z1), z2z2), h)
        return Jacobian(x: x3, y: y3, z: z3)
    }
}
