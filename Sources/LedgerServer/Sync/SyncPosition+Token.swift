import Foundation
import LedgerCore
import LedgerModel

/// A sync position's wire form: an opaque token, base64url of `version(1) · household
/// uuid(16) · incarnation(8, big-endian) · seq(8, big-endian)`, and since version 2 `·
/// database incarnation(8, big-endian)`; version 3, a child's feed position, is `3 · household
/// uuid(16) · child uuid(16) · incarnation · seq · database incarnation`. A token that is not one this server could have
/// issued, or no longer valid for its household, is 410 `token_expired`; one of an earlier
/// database incarnation or ahead of the household is 410 `history_rewound`.
extension SyncPosition {
    /// The wire format's version byte: 2 names the database incarnation, 1 (earlier servers) does not.
    static let tokenVersion: UInt8 = 2
    /// The version byte of a child's feed position.
    static let childTokenVersion: UInt8 = 3
    private static let tokenByteCounts: [UInt8: Int] = [1: 1 + 16 + 8 + 8, 2: 1 + 16 + 8 + 8 + 8, 3: 1 + 16 + 16 + 8 + 8 + 8]

    /// The opaque wire form.
    var token: String {
        var bytes: [UInt8] = [child != nil ? SyncPosition.childTokenVersion : database == nil ? 1 : SyncPosition.tokenVersion]
        let u = (LedgerIDs.parse(household) ?? UUID()).uuid
        bytes += [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15]
        if let child {
            let c = (LedgerIDs.parse(child) ?? UUID()).uuid
            bytes += [c.0, c.1, c.2, c.3, c.4, c.5, c.6, c.7, c.8, c.9, c.10, c.11, c.12, c.13, c.14, c.15]
        }
        bytes += SyncPosition.bigEndian(incarnation)
        bytes += SyncPosition.bigEndian(seq)
        if let database { bytes += SyncPosition.bigEndian(database) }
        return TokenSecret.base64url(bytes)
    }

    /// Decodes a wire token; nil when it is not one this server could have issued.
    init?(token raw: String) {
        guard raw.utf8.count <= 96, let bytes = TokenSecret.base64urlDecode(raw), let version = bytes.first,
              bytes.count == SyncPosition.tokenByteCounts[version] else { return nil }
        let u = UUID(uuid: (bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                            bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15], bytes[16]))
        var child: String?
        var at = 17
        if version == SyncPosition.childTokenVersion {
            child = UUID(uuid: (bytes[17], bytes[18], bytes[19], bytes[20], bytes[21], bytes[22], bytes[23], bytes[24],
                                bytes[25], bytes[26], bytes[27], bytes[28], bytes[29], bytes[30], bytes[31], bytes[32])).lowercased
            at = 33
        }
        let incarnation = SyncPosition.int64(bytes[at..<at + 8])
        let seq = SyncPosition.int64(bytes[at + 8..<at + 16])
        guard seq >= 0 else { return nil }
        let database = version >= 2 ? SyncPosition.int64(bytes[at + 16..<at + 24]) : nil
        let position = SyncPosition(household: u.lowercased, incarnation: incarnation, seq: seq, database: database, child: child)
        guard position.token == raw else { return nil }
        self = position
    }

    /// The position a request's `since` names: nil for none (the feed from its start), and
    /// `nowhere` for a token that names no position (refused as expired by the feed).
    static func since(_ raw: String?) -> SyncPosition? {
        raw.map { SyncPosition(token: $0) ?? .nowhere }
    }

    /// The error every unusable token answers with.
    static var expired: APIError {
        APIError(410, "token_expired", "The sync token is not valid for this household any more; fetch everything again without `since`.")
    }

    /// The answer to a position from before the server went back in time.
    static var rewound: APIError {
        APIError(410, "history_rewound", "The server's history went back in time (a restore or a failover) since this position; "
                 + "fetch everything again without `since`, then push every record this device holds that the server lacks "
                 + "(POST …/reconcile finds them).")
    }

    private static func bigEndian(_ v: Int64) -> [UInt8] {
        let u = UInt64(bitPattern: v)
        return (0..<8).map { UInt8(truncatingIfNeeded: u >> (56 - 8 * UInt64($0))) }
    }

    private static func int64(_ b: ArraySlice<UInt8>) -> Int64 {
        Int64(bitPattern: b.reduce(UInt64(0)) { ($0 << 8) | UInt64($1) })
    }
}
