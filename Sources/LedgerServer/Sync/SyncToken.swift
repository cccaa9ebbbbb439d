import Foundation
import LedgerModel

/// A change-feed position, bound to one household and one incarnation of it.
///
/// On the wire it is opaque: base64url of `version(1) · household uuid(16) ·
/// incarnation(8, big-endian) · seq(8, big-endian)`. A token is valid for a household
/// only while the household keeps the incarnation it was issued under and its change
/// sequence has reached the token's `seq`; anything else is 410 `token_expired`.
struct SyncToken: Equatable, Sendable {
    /// The wire format's version byte.
    static let version: UInt8 = 1
    private static let byteCount = 1 + 16 + 8 + 8

    /// Lowercase household id.
    let household: String
    /// `households.incarnation` when the token was issued.
    let incarnation: Int64
    /// Every change with a sequence number ≤ `seq` has been delivered.
    let seq: Int64

    /// The opaque wire form.
    var encoded: String {
        var bytes: [UInt8] = [SyncToken.version]
        let u = (LedgerIDs.parse(household) ?? UUID()).uuid
        bytes += [u.0, u.1, u.2, u.3, u.4, u.5, u.6, u.7, u.8, u.9, u.10, u.11, u.12, u.13, u.14, u.15]
        bytes += SyncToken.bigEndian(incarnation)
        bytes += SyncToken.bigEndian(seq)
        return TokenSecret.base64url(bytes)
    }

    /// Decodes a wire token; nil when it is not one this server could have issued.
    static func decode(_ raw: String) -> SyncToken? {
        guard raw.utf8.count <= 64, let bytes = TokenSecret.base64urlDecode(raw),
              bytes.count == byteCount, bytes[0] == version else { return nil }
        let u = UUID(uuid: (bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8],
                            bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15], bytes[16]))
        let incarnation = int64(bytes[17..<25])
        let seq = int64(bytes[25..<33])
        guard seq >= 0 else { return nil }
        guard SyncToken(household: u.lowercased, incarnation: incarnation, seq: seq).encoded == raw else { return nil }
        return SyncToken(household: u.lowercased, incarnation: incarnation, seq: seq)
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
