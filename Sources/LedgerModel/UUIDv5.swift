import Foundation

/// Name-based UUIDs (RFC 9562 version 5, SHA-1).
public enum UUIDv5 {
    /// The UUIDv5 of `name` (UTF-8) in `namespace`.
    public static func make(namespace: UUID, name: String) -> UUID {
        var bytes: [UInt8] = withUnsafeBytes(of: namespace.uuid) { Array($0) }
        bytes.append(contentsOf: Array(name.utf8))
        var d = Array(SHA1.digest(bytes).prefix(16))
        d[6] = (d[6] & 0x0F) | 0x50
        d[8] = (d[8] & 0x3F) | 0x80
        return UUID(uuid: (d[0], d[1], d[2], d[3], d[4], d[5], d[6], d[7],
                           d[8], d[9], d[10], d[11], d[12], d[13], d[14], d[15]))
    }
}

extension UUID {
    /// The canonical lowercase form, as the API writes ids.
    public var lowercased: String { uuidString.lowercased() }
}

/// Deterministic identifiers shared by server and clients.
public enum LedgerIDs {
    /// Namespace for reversal and idempotency ids: 6f1c7a52-3b0e-4c8e-9d55-2a4b8e1f0c3d.
    public static let namespace = UUID(uuidString: "6f1c7a52-3b0e-4c8e-9d55-2a4b8e1f0c3d")!

    /// The id of the reversal of transaction `id`: UUIDv5(namespace, "reversal:" + id lowercase).
    public static func reversalID(of id: UUID) -> UUID {
        UUIDv5.make(namespace: namespace, name: "reversal:" + id.lowercased)
    }

    /// The id given to a transaction posted with `Idempotency-Key: key` by `accountId`.
    public static func idempotencyID(accountId: UUID, key: String) -> UUID {
        UUIDv5.make(namespace: namespace, name: "idempotency:" + accountId.lowercased + ":" + key)
    }

    /// Parses a UUID in any case; nil when malformed.
    public static func parse(_ s: some StringProtocol) -> UUID? {
        guard s.utf8.count == 36 else { return nil }
        return UUID(uuidString: String(s))
    }
}
