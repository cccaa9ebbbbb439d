/// The few DER encodings (X.690) the verifier builds: public keys as `SubjectPublicKeyInfo`
/// from a JWK's numbers, and ECDSA signatures as `ECDSA-Sig-Value` from JOSE's raw `r ‖ s`.
enum DER {
    /// `rsaEncryption` (1.2.840.113549.1.1.1).
    static let rsaEncryption: [UInt8] = [0x2A, 0x86, 0x48, 0x86, 0xF7, 0x0D, 0x01, 0x01, 0x01]
    /// `id-ecPublicKey` (1.2.840.10045.2.1).
    static let ecPublicKey: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x02, 0x01]
    /// `prime256v1` / P-256 (1.2.840.10045.3.1.7).
    static let prime256v1: [UInt8] = [0x2A, 0x86, 0x48, 0xCE, 0x3D, 0x03, 0x01, 0x07]

    static func sequence(_ parts: [UInt8]...) -> [UInt8] { element(0x30, parts.flatMap { $0 }) }
    static func objectIdentifier(_ encoded: [UInt8]) -> [UInt8] { element(0x06, encoded) }
    static let null: [UInt8] = [0x05, 0x00]
    /// A BIT STRING of whole bytes (no unused bits).
    static func bitString(_ bytes: [UInt8]) -> [UInt8] { element(0x03, [0x00] + bytes) }

    /// The INTEGER whose unsigned big-endian magnitude is `magnitude` (leading zeros dropped,
    /// a zero byte prepended when the high bit is set, so it stays positive).
    static func unsignedInteger<C: Collection<UInt8>>(_ magnitude: C) -> [UInt8] {
        var bytes = Array(magnitude.drop { $0 == 0 })
        if bytes.isEmpty || bytes[0] & 0x80 != 0 { bytes.insert(0, at: 0) }
        return element(0x02, bytes)
    }

    /// A tag, its definite length and its content.
    static func element(_ tag: UInt8, _ content: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [tag]
        out.reserveCapacity(content.count + 4)
        let count = content.count
        if count < 0x80 {
            out.append(UInt8(count))
        } else if count <= 0xFF {
            out += [0x81, UInt8(count)]
        } else {
            precondition(count <= 0xFFFF, "DER content over 64 KiB")
            out += [0x82, UInt8(count >> 8), UInt8(count & 0xFF)]
        }
        return out + content
    }
}
