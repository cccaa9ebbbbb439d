import COpenSSL
import Foundation
import LedgerCore
import Synchronization

/// Opaque list cursors, bound to the list that gave them out.
///
/// A cursor carries a position (one or more integers, such as a row number) encrypted and
/// authenticated under a key of this server, with the list's identity (its kind and whose
/// or which household's list it is) as associated data. Nothing of the position shows,
/// and a cursor from another list, household, child or account, or an altered one, is
/// refused (422) instead of paging something else.
///
/// The construction is a synthetic-IV scheme over HMAC-SHA256: the tag is
/// `HMAC(key, "tag" ‖ list ‖ position)` cut to 16 bytes, and the position is XORed with
/// `HMAC(key, "pad" ‖ tag)`, extended block by block (`pad(_:length:)`). It is
/// deterministic, so the same page always has the same cursor. Wire form: base64url of
/// `encrypted position ‖ tag`.
///
/// The position carries the database's incarnation last: a cursor handed out before the
/// database went back in time (`restore`, `rewound`) is 410 `history_rewound`.
final class Cursor: Sendable {
    private let key: [UInt8]
    /// The database's incarnation (0 until known): set at start and by every feed read.
    private let database = Atomic<Int64>(0)
    static let tagLength = 16
    static let keyLength = 32

    init(key: [UInt8]) {
        precondition(key.count == Cursor.keyLength)
        self.key = key
    }

    /// The key kept in `directory/cursor.key` (created with 32 random bytes when missing or
    /// not 32 bytes long), so cursors outlive a restart. Processes sharing the folder that
    /// start together all use the one key the file ends up with (see `KeyFile`). When the
    /// file cannot be written the key lives only as long as the process.
    convenience init(directory: String) {
        let path = directory + "/cursor.key"
        let existing = FileManager.default.contents(atPath: path)
        if let data = existing, data.count == Cursor.keyLength {
            self.init(key: Array(data))
            return
        }
        let key = Cursor.randomKey()
        if existing == nil {
            if (try? KeyFile.createUnlessPresent(path, contents: Data(key))) == false,
               let data = FileManager.default.contents(atPath: path), data.count == Cursor.keyLength {
                self.init(key: Array(data))
                return
            }
        } else {
            // A file of another length is not a key of ours: replace it.
            let temporary = path + ".new"
            if FileManager.default.createFile(atPath: temporary, contents: Data(key), attributes: [.posixPermissions: 0o600]) {
                if rename(temporary, path) != 0 { unlink(temporary) }
            }
        }
        self.init(key: key)
    }

    static func randomKey() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: keyLength)
        if RAND_bytes(&bytes, Int32(keyLength)) != 1 {
            var g = SystemRandomNumberGenerator()
            for i in 0..<keyLength { bytes[i] = UInt8.random(in: 0...255, using: &g) }
        }
        return bytes
    }

    /// Records the database's incarnation as storage last reported it.
    func observe(database incarnation: Int64) {
        database.store(incarnation, ordering: .relaxed)
    }

    /// The cursor for `position` in `list` (for example `"transactions \(household)"`).
    func encode(list: String, _ position: [Int64]) -> String {
        precondition(!position.isEmpty && position.count <= 4)
        let plain = (position + [database.load(ordering: .relaxed)]).flatMap { v in (0..<8).map { UInt8(truncatingIfNeeded: UInt64(bitPattern: v) >> (56 - 8 * $0)) } }
        let tag = Array(mac(Array("tag\0".utf8) + Array(list.utf8) + [0] + plain).prefix(Cursor.tagLength))
        let pad = pad(tag, length: plain.count)
        return TokenSecret.base64url(zip(plain, pad).map { $0 ^ $1 } + tag)
    }

    /// The position of a cursor `list` gave out, with `count` integers; nil when absent or
    /// empty (the first page); 422 `validation_failed` for anything else.
    func decode(_ raw: String?, list: String, count: Int) throws -> [Int64]? {
        guard let raw, !raw.isEmpty else { return nil }
        let refused = APIError.validation("cursor", "is not a cursor this list gave out")
        let stored = count + 1   // the position, then the database's incarnation
        guard let bytes = TokenSecret.base64urlDecode(raw), bytes.count == 8 * stored + Cursor.tagLength else { throw refused }
        let tag = Array(bytes.suffix(Cursor.tagLength))
        let pad = pad(tag, length: 8 * stored)
        let plain = zip(bytes.prefix(8 * stored), pad).map { $0 ^ $1 }
        let expected = Array(mac(Array("tag\0".utf8) + Array(list.utf8) + [0] + plain).prefix(Cursor.tagLength))
        guard TokenSecret.constantTimeEqual(expected, tag) else { throw refused }
        let values = (0..<stored).map { i in
            Int64(bitPattern: plain[(8 * i)..<(8 * i + 8)].reduce(UInt64(0)) { $0 << 8 | UInt64($1) })
        }
        let current = database.load(ordering: .relaxed)
        if current != 0, values[count] != 0, values[count] != current { throw SyncPosition.rewound }
        return Array(values.prefix(count))
    }

    /// The position of a one-integer cursor (see `decode(_:list:count:)`).
    func decode(_ raw: String?, list: String) throws -> Int64? {
        try decode(raw, list: list, count: 1)?[0]
    }

    /// `HMAC(key, "pad" ‖ tag)`, followed by `HMAC(key, "pad" ‖ tag ‖ i)` for i = 1, 2, …
    /// until `length` bytes (a position of five integers is longer than one HMAC).
    private func pad(_ tag: [UInt8], length: Int) -> [UInt8] {
        var out = mac(Array("pad\0".utf8) + tag)
        var block: UInt8 = 1
        while out.count < length {
            out += mac(Array("pad\0".utf8) + tag + [block])
            block += 1
        }
        return out
    }

    private func mac(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        var length = 0
        let ok = key.withUnsafeBytes { k in
            data.withUnsafeBufferPointer { d in
                EVP_Q_mac(nil, "HMAC", nil, "SHA256", nil, k.baseAddress, k.count, d.baseAddress, d.count, &out, 32, &length)
            }
        }
        precondition(ok != nil && length == 32, "HMAC-SHA256 failed")
        return out
    }
}
