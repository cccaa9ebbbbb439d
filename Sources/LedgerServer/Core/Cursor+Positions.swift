import Foundation
import LedgerCore

/// A list position as a cursor carries it: a few integers. Ids go in as a UUID's two 64-bit
/// halves and come out written lowercase again (the order of ids as stored).
protocol CursorPosition {
    /// How many integers.
    static var cursorValueCount: Int { get }
    var cursorValues: [Int64] { get }
    init(cursorValues v: [Int64])
}

extension Cursor {
    /// The cursor after `position` in `list`.
    func encode<Position: CursorPosition>(list: String, _ position: Position) -> String {
        encode(list: list, position.cursorValues)
    }

    /// The position of a cursor `list` gave out; nil when absent or empty (the first page).
    func position<Position: CursorPosition>(_ raw: String?, list: String) throws -> Position? {
        try decode(raw, list: list, count: Position.cursorValueCount).map(Position.init(cursorValues:))
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

/// A row number (households, transactions).
extension Int64: CursorPosition {
    static var cursorValueCount: Int { 1 }
    var cursorValues: [Int64] { [self] }
    init(cursorValues v: [Int64]) { self = v[0] }
}

/// Tokens, oldest first; blocks, newest first.
extension TimeAndIdPosition: CursorPosition {
    static var cursorValueCount: Int { 3 }
    var cursorValues: [Int64] { [time] + Cursor.halves(id) }
    init(cursorValues v: [Int64]) { self.init(time: v[0], id: Cursor.id(v[1], v[2])) }
}

/// The devices of a sync status.
extension DevicePosition: CursorPosition {
    static var cursorValueCount: Int { 4 }
    var cursorValues: [Int64] { Cursor.halves(accountId) + Cursor.halves(tokenId) }
    init(cursorValues v: [Int64]) { self.init(accountId: Cursor.id(v[0], v[1]), tokenId: Cursor.id(v[2], v[3])) }
}

/// Pending invitations: the last one's invitation time and row order.
extension InvitationPosition: CursorPosition {
    static var cursorValueCount: Int { 2 }
    var cursorValues: [Int64] { [invitedAt, order] }
    init(cursorValues v: [Int64]) { self.init(invitedAt: v[0], order: v[1]) }
}
