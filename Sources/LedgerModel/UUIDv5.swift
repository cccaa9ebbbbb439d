import Foundation

/// Name-based UUIDs (RFC 9562 version 5, SHA-1).
public enum UUIDv5 {
    /// The UUIDv5 of `name` (UTF-8) in `namespace`.
    public static func make(namespace: UUID, name: String) -> UUID {
        var name = name
        return name.withUTF8 { n in make(namespace: namespace, nameMaxCount: n.count) { $0.put(n) } }
    }

    /// The UUIDv5 of the name `writeName` writes (at most `nameMaxCount` bytes) in
    /// `namespace`: the namespace and the name are hashed (with `sha1`) from one buffer on
    /// the stack, and a name made of parts never becomes a String.
    public static func make(namespace: UUID, nameMaxCount: Int, sha1: SHA1.Function = .portable,
                            _ writeName: (inout ByteWriter) -> Void) -> UUID {
        let h = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 16 + nameMaxCount) { m in
            withUnsafeBytes(of: namespace.uuid) { ns in
                for i in 0..<16 { m[i] = ns[i] }
            }
            var w = ByteWriter(UnsafeMutableBufferPointer(rebasing: m[16...]))
            writeName(&w)
            return sha1.words(UnsafeRawBufferPointer(rebasing: UnsafeMutableRawBufferPointer(m)[0..<(16 + w.count)]))
        }
        func b(_ v: UInt32, _ shift: UInt32) -> UInt8 { UInt8(truncatingIfNeeded: v >> shift) }
        return UUID(uuid: (b(h.0, 24), b(h.0, 16), b(h.0, 8), b(h.0, 0), b(h.1, 24), b(h.1, 16),
                           (b(h.1, 8) & 0x0F) | 0x50, b(h.1, 0), (b(h.2, 24) & 0x3F) | 0x80, b(h.2, 16), b(h.2, 8), b(h.2, 0),
                           b(h.3, 24), b(h.3, 16), b(h.3, 8), b(h.3, 0)))
    }
}

extension UUID {
    /// The canonical lowercase form, as the API writes ids.
    public var lowercased: String {
        String(unsafeUninitializedCapacity: 36) { out in
            writeLowercased(to: out.baseAddress!)
            return 36
        }
    }

    /// The 36 bytes of `lowercased` at `out`.
    func writeLowercased(to out: UnsafeMutablePointer<UInt8>) {
        // Each byte's two digits copied from a table, the dashes at their fixed places.
        let digits = UUID.hexPairs.utf8Start
        withUnsafeBytes(of: uuid) { raw in
            var o = 0
            for i in 0..<16 {
                let pair = digits + 2 * Int(raw[i])
                out[o] = pair[0]
                out[o + 1] = pair[1]
                o += 2
                if o == 8 || o == 13 || o == 18 || o == 23 { out[o] = UInt8(ascii: "-"); o += 1 }
            }
        }
    }

    /// "00" to "ff", lowercase: byte `b`'s digits at offset 2 * b.
    private static let hexPairs: StaticString = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9fa0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedfe0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
}

extension ByteWriter {
    /// The 36 bytes of `uuid.lowercased`.
    public mutating func putLowercased(_ uuid: UUID) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 36) { text in
            uuid.writeLowercased(to: text.baseAddress!)
            put(UnsafeBufferPointer(text))
        }
    }
}

/// Deterministic identifiers shared by server and clients.
public enum LedgerIDs {
    /// Namespace for reversal and idempotency ids: 6f1c7a52-3b0e-4c8e-9d55-2a4b8e1f0c3d.
    public static let namespace = UUID(uuidString: "6f1c7a52-3b0e-4c8e-9d55-2a4b8e1f0c3d")!

    /// The id of the reversal of transaction `id`: UUIDv5(namespace, "reversal:" + id lowercase).
    public static func reversalID(of id: UUID, sha1: SHA1.Function = .portable) -> UUID {
        UUIDv5.make(namespace: namespace, nameMaxCount: 9 + 36, sha1: sha1) { w in
            w.put(literal: "reversal:")
            w.putLowercased(id)
        }
    }

    /// `idempotencyID(accountId:key:)` of the account id given as text (any case); nil
    /// when it is not a UUID. Text already in lowercase canonical form is hashed as it is.
    public static func idempotencyID(accountIdText: String, key: String, sha1: SHA1.Function = .portable) -> UUID? {
        var text = accountIdText
        let canonical = text.withUTF8 { isLowercaseCanonical(utf8: $0) }
        guard canonical else { return parse(accountIdText).map { idempotencyID(accountId: $0, key: key, sha1: sha1) } }
        return UUIDv5.make(namespace: namespace, nameMaxCount: 12 + 36 + 1 + key.utf8.count, sha1: sha1) { w in
            w.put(literal: "idempotency:")
            w.put(utf8: text)
            w.put(58)
            w.put(utf8: key)
        }
    }

    /// The id given to a transaction posted with `Idempotency-Key: key` by `accountId`.
    public static func idempotencyID(accountId: UUID, key: String, sha1: SHA1.Function = .portable) -> UUID {
        UUIDv5.make(namespace: namespace, nameMaxCount: 12 + 36 + 1 + key.utf8.count, sha1: sha1) { w in
            w.put(literal: "idempotency:")
            w.putLowercased(accountId)
            w.put(58)
            w.put(utf8: key)
        }
    }

    /// `s` as a UUID in lowercase canonical form (`parse(s)?.lowercased`); `s` itself when
    /// it is already in that form (ids sent by the SDK are), neither parsed nor written again.
    public static func lowercaseCanonical(_ s: String) -> String? {
        var text = s
        if text.withUTF8({ isLowercaseCanonical(utf8: $0) }) { return s }
        return parse(s)?.lowercased
    }

    /// Parses a UUID in any case; nil when malformed. (A String is read in place: the
    /// generic form below goes through the protocol's witnesses when called from another
    /// module, several times the cost of the parse.)
    public static func parse(_ s: String) -> UUID? {
        var text = s
        return text.withUTF8 { parse(utf8: $0) }
    }

    /// Parses a UUID in any case; nil when malformed.
    public static func parse(_ s: some StringProtocol) -> UUID? {
        guard s.utf8.count == 36 else { return nil }
        var text = String(s)
        return text.withUTF8 { parse36($0) }
    }

    /// Parses a UUID in any case from its UTF-8 bytes; nil when malformed.
    public static func parse(utf8 text: UnsafeBufferPointer<UInt8>) -> UUID? {
        text.count == 36 ? parse36(text) : nil
    }

    /// Whether `text` is a UUID in the form `lowercased` writes (so `parse` then
    /// `lowercased` gives the same bytes back): 36 bytes, lowercase hex digits, dashes
    /// after the 8th, 12th, 16th and 20th digit.
    public static func isLowercaseCanonical(utf8 text: UnsafeBufferPointer<UInt8>) -> Bool {
        guard text.count == 36, text[8] == UInt8(ascii: "-"), text[13] == UInt8(ascii: "-"),
              text[18] == UInt8(ascii: "-"), text[23] == UInt8(ascii: "-") else { return false }
        // The five runs of digits through `hexDigits`, without a branch per byte: deciding
        // digit or letter for random hex mispredicted about every other byte. Neither a
        // non-digit nor an uppercase letter may appear.
        var marks: UInt8 = 0
        hexDigits.withUnsafeBufferPointer { table in
            let values = table.baseAddress!, t = text.baseAddress!
            func run(_ from: Int, _ to: Int) { for i in from..<to { marks |= values[Int(t[i])] } }
            run(0, 8); run(9, 13); run(14, 18); run(19, 23); run(24, 36)
        }
        return marks & (notHexDigit | uppercaseHexDigit) == 0
    }

    private static func parse36(_ text: UnsafeBufferPointer<UInt8>) -> UUID? {
        guard text[8] == UInt8(ascii: "-"), text[13] == UInt8(ascii: "-"), text[18] == UInt8(ascii: "-"),
              text[23] == UInt8(ascii: "-") else { return nil }
        var bytes: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                    UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        // Every digit is decoded through `hexDigits`, without a branch on its value (random
        // hex digits made a digit-or-letter branch mispredict about every other byte); a
        // bad one leaves its mark in `marks` (one test at the end).
        var marks: UInt8 = 0
        hexDigits.withUnsafeBufferPointer { table in
            let values = table.baseAddress!, t = text.baseAddress!
            withUnsafeMutableBytes(of: &bytes) { out in
                var i = 0
                for n in 0..<16 {
                    if i == 8 || i == 13 || i == 18 || i == 23 { i += 1 }
                    let h = values[Int(t[i])], l = values[Int(t[i + 1])]
                    marks |= h | l
                    out[n] = (h & 0x0F) << 4 | (l & 0x0F)
                    i += 2
                }
            }
        }
        return marks & notHexDigit == 0 ? UUID(uuid: bytes) : nil
    }

    /// Each byte as a hex digit: its value in the low four bits, `uppercaseHexDigit` added
    /// for "A"..."F"; `notHexDigit` for anything else. Read by `parse36` (either case) and
    /// `isLowercaseCanonical` (lowercase only).
    private static let hexDigits: [UInt8] = (0..<256).map { c in
        switch c {
        case 48...57: UInt8(c - 48)
        case 65...70: UInt8(c - 55) | uppercaseHexDigit
        case 97...102: UInt8(c - 87)
        default: notHexDigit
        }
    }
    private static let uppercaseHexDigit: UInt8 = 0x40
    private static let notHexDigit: UInt8 = 0x80
}
