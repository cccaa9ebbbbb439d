import Foundation
import LedgerCore
import LedgerModel

/// A sync position's wire form: an opaque token, base64url of `version(1) · household
/// uuid(16) · incarnation(8, big-endian) · seq(8, big-endian)`. A token that is not one this
/// server could have issued, or no longer valid for its household, is 410 `token_expired`.
extension SyncPosition {
    /// The wire format's version byte.
    static let tokenVersion: UInt8 = 1
    private static let tokenByteCount = 1 + 16 + 8 + 8

    /// The opaque wire form.
    var token: String {
        var bytes: [UInt8] = [SyncPosition.tokenVersion]
        let u = (LedgerIDs.parse(household) ?? UUID()).uuid
        bytes += [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15]
        bytes += SyncPosition.bigEndian(incarnation)
        bytes += SyncPosition.bigEndian(seq)
        return TokenSecret.base64url(bytes)
    }

    /// Decodes a wire token; nil when it is not one this server could have issued.
    init?(token raw: String) {
        guard raw.utf8.count <= 64, let bytes = TokenSecret.base64urlDecode(raw),
              bytes.count == SyncPosition.tokenByteCount, bytes[0] == SyncPosition.tokenVersion else { return nil }
        let u = UUID(uuid: (bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                            bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15], bytes[16]))
        let incarnation = SyncPosition.int64(bytes[17..<25])
        let seq = SyncPosition.int64(bytes[25..<33])
        guard seq >= 0 else { return nil }
        let position = SyncPosition(household: u.lowercased, incarnation: incarnation, seq: seq)
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

    private static func bigEndian(_ v: Int64) -> [UInt8] {
        let u = UInt64(bitPattern: v)
        return (0..<8).map { UInt8(truncatingIfNeeded: u >> (56 - 8 * UInt64($0))) }
    }

    private static func int64(_ b: ArraySlice<UInt8>) -> Int64 {
        Int64(bitPattern: b.reduce(UInt64(0)) { ($0 << 8) | UInt64($1) })
    }
}
