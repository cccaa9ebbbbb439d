import Foundation
import LedgerCore

/// Positions that hold ids: a cursor carries integers, so a UUID goes in as its two 64-bit
/// halves and comes out written lowercase again (the order of ids as stored).
extension Cursor {
    /// The cursor after the row with this time and id in `list`.
    func encode(list: String, _ position: TimeAndIdPosition) -> String {
        encode(list: list, [position.time] + Self.halves(position.id))
    }

    /// The time-and-id position of a cursor `list` gave out; nil when absent or empty.
    func decodeTimeAndId(_ raw: String?, list: String) throws -> TimeAndIdPosition? {
        try decode(raw, list: list, count: 3).map { TimeAndIdPosition(time: $0[0], id: Self.id($0[1], $0[2])) }
    }

    /// The cursor after this (account, token) pair in `list`.
    func encode(list: String, _ position: DevicePosition) -> String {
        encode(list: list, Self.halves(position.accountId) + Self.halves(position.tokenId))
    }

    /// The device position of a cursor `list` gave out; nil when absent or empty.
    func decodeDevice(_ raw: String?, list: String) throws -> DevicePosition? {
        try decode(raw, list: list, count: 4).map { DevicePosition(accountId: Self.id($0[0], $0[1]), tokenId: Self.id($0[2], $0[3])) }
    }

    /// A UUID's 16 bytes as two big-endian integers (zeros for text that is not a UUID).
    static func halves(_ id: String) -> [Int64] {
        guard let u = UUID(uuidString: id) else { return [0, 0] }
        let bytes = withUnsafeBytes(of: u.uuid) { Array($0) }
        return [0, 8].map { start in
            Int64(bitPattern: bytes[start..<start + 8].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        }
    }

    /// The UUID of two such integers, written lowercase.
    static func id(_ high: Int64, _ low: Int64) -> String {
        let bytes = [high, low].flatMap { v in (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: v) >> (56 - 8 * $0)) } }
        let u = UUID(uuid: (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                            bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]))
        return u.uuidString.lowercased()
    }
}
