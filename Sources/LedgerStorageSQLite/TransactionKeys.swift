import Foundation
import LedgerCore
import LedgerModel
import SQLiteKit
import Synchronization

/// The SQLite ledger's id index, held in memory instead of in the database: for each
/// household, a transaction's key (`reversal_id`, the id its reversal takes) → its row
/// number. The keys are random, so in a B-tree each insert rewrote a leaf of its own in
/// every group commit; here an insert is a dictionary entry (docs/performance.md).
///
/// It is an index, not the truth: every entry found is checked against its row (row
/// number, household and key, in the caller's own snapshot), so an entry left behind by a
/// rolled-back insert, a deleted household or a row number used again reads as absent.
/// What must never happen is a row with no entry: every transaction row is loaded at
/// start (`load`), and the writer — the only connection that inserts transactions while
/// the server runs (`serve` holds the data folder's lock) — adds each one as it inserts
/// it, before its batch commits. Entries are never removed while the server runs (a
/// deleted household's stay, reading as absent, until the next start).
///
/// Memory: about 35 bytes a transaction; loading takes about 0.75 s per million at start.
package final class TransactionKeys: Sendable {
    /// A stored key: a UUID's 16 bytes (every key since version 7 but those of ids that
    /// are not UUIDs), or the text key of an id that is not one.
    enum Key: Hashable, Sendable {
        case uuid(UUIDKey)
        case text(String)

        /// The key `Schema.reversalKey` stores for `reversalId`.
        init(reversalId: String) {
            if let u = LedgerIDs.parse(reversalId) { self = .uuid(UUIDKey(u)) } else { self = .text(reversalId) }
        }

        /// The key of a stored `reversal_id` value, given as its column type and bytes (nil
        /// for a value no key can have).
        init?(stored type: SQLiteColumnType, _ bytes: UnsafeRawBufferPointer) {
            switch type {
            case .blob where bytes.count == 16: self = .uuid(UUIDKey(raw: bytes))
            case .text: self = .text(String(decoding: bytes, as: UTF8.self))
            default: return nil
            }
        }

        /// Binds the value as the column stores it (a UUID's bytes without an array).
        func bind(_ b: inout SQLiteBinder) throws {
            switch self {
            case .uuid(let k): try withUnsafeBytes(of: (k.high.bigEndian, k.low.bigEndian)) { try b.blob($0) }
            case .text(let s): try b.text(s)
            }
        }

        /// The value as the column stores it.
        var stored: SQLiteValue {
            switch self {
            case .uuid(let k): return .blob(k.bytes)
            case .text(let s): return .text(s)
            }
        }
    }

    /// A UUID's 16 bytes as two words. The bytes are a SHA-1's: hashing the first word is
    /// enough to spread them.
    struct UUIDKey: Hashable, Sendable {
        let high: UInt64
        let low: UInt64

        init(_ u: UUID) {
            (high, low) = withUnsafeBytes(of: u.uuid) { raw in
                (UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self)),
                 UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
            }
        }

        /// From 16 bytes.
        init(raw: UnsafeRawBufferPointer) {
            precondition(raw.count == 16)
            high = UInt64(bigEndian: raw.loadUnaligned(as: UInt64.self))
            low = UInt64(bigEndian: raw.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
        }

        /// The 16 bytes, in the UUID's order.
        var bytes: [UInt8] { withUnsafeBytes(of: (high.bigEndian, low.bigEndian)) { Array($0) } }

        func hash(into hasher: inout Hasher) { hasher.combine(high) }
        static func == (a: UUIDKey, b: UUIDKey) -> Bool { a.high == b.high && a.low == b.low }
    }

    private struct Household {
        var uuids = UUIDShards()
        var texts: [String: Int64] = [:]
    }

    /// A household's UUID keys: one dictionary while it is small, then 64, by six random
    /// bits of the key (the last byte's; the first bytes of each word carry the UUID's
    /// version and variant), so that growing a dictionary, which rehashes it under the
    /// index's lock, never stalls the writer long. The split, at `splitAt` keys, moves each
    /// key once.
    struct UUIDShards {
        static let count = 64
        static let splitAt = 32_768
        private var shards: [[UUIDKey: Int64]] = [[:]]

        /// The dictionary of the 64 that holds `k` once split.
        static func shard(of k: UUIDKey) -> Int { Int(truncatingIfNeeded: k.low & UInt64(count - 1)) }

        private func shard(_ k: UUIDKey) -> Int { isSplit ? Self.shard(of: k) : 0 }

        var isEmpty: Bool { shards.allSatisfy(\.isEmpty) }
        /// Whether the keys are split over `count` dictionaries.
        var isSplit: Bool { shards.count > 1 }

        subscript(_ k: UUIDKey) -> Int64? { shards[shard(k)][k] }

        /// Sets `k`'s row; the row it had, if any.
        mutating func updateValue(_ row: Int64, forKey k: UUIDKey) -> Int64? {
            if !isSplit, shards[0].count >= Self.splitAt { split() }
            return shards[shard(k)].updateValue(row, forKey: k)
        }

        /// Room for `total` keys (split when that many would be), with an eighth more per
        /// dictionary for uneven shares.
        mutating func reserveCapacity(_ total: Int) {
            if !isSplit && total < Self.splitAt {
                shards[0].reserveCapacity(total)
                return
            }
            if !isSplit { split() }
            for i in shards.indices { shards[i].reserveCapacity(Self.share(of: total)) }
        }

        /// One dictionary's room when `total` keys are spread: an eighth more than an even share.
        private static func share(of total: Int) -> Int { total / count + total / (8 * count) + 1 }

        private mutating func split() {
            let all = shards[0]
            shards = (0..<Self.count).map { _ in
                var d: [UUIDKey: Int64] = [:]
                d.reserveCapacity(Self.share(of: all.count))
                return d
            }
            for (k, row) in all { shards[Self.shard(of: k)][k] = row }
        }
    }

    private struct State {
        /// By household id.
        var households: [HashedKey: Household] = [:]
        var count = 0
        /// The household last looked up (the writer's lookup and insert of one write name
        /// the same one).
        var memo = KeyMemo()
    }

    private let state = Mutex(State())

    init() {}

    /// Every transaction row of `db` (rows whose household is missing are left out: they
    /// belong to no ledger, and `check` reports them). One pass over the table, reading
    /// each row's three columns in place (about 0.5 s per million rows); give it a
    /// connection of its own, so that the pages it reads pass through a small cache.
    static func load(_ db: SQLiteConnection) throws -> TransactionKeys {
        // Households by ledger key, each one's dictionary sized once (counted through an
        // index led by the household key) instead of grown by doubling as the rows come.
        var byKey: [Int64: (id: String, keys: Household)] = [:]
        for r in try db.query("SELECT ledger_key, id FROM households WHERE ledger_key IS NOT NULL") {
            byKey[r.int(0)] = (r.string(1), Household())
        }
        for r in try db.query("SELECT household_key, COUNT(*) FROM transactions GROUP BY household_key") {
            byKey[r.int(0)]?.keys.uuids.reserveCapacity(Int(r.int(1)))
        }
        let rows = try db.prepare("SELECT household_key, reversal_id, n FROM transactions")
        try rows.bind([])
        var count = 0
        while try rows.step() {
            let household = rows.int64(0), row = rows.int64(2)
            guard byKey[household] != nil else { continue }
            let type = rows.columnType(1)
            switch rows.withColumnBytes(1, { Key(stored: type, $0) }) {
            case .uuid(let k): _ = byKey[household]!.keys.uuids.updateValue(row, forKey: k)
            case .text(let s): byKey[household]!.keys.texts[s] = row
            case nil: continue
            }
            count += 1
        }
        try rows.finish()
        let keys = TransactionKeys()
        keys.state.withLock { state in
            for (_, h) in byKey where !h.keys.uuids.isEmpty || !h.keys.texts.isEmpty { state.households[HashedKey(h.id)] = h.keys }
            state.count = count
        }
        return keys
    }

    /// The row number last recorded for `key` in `household` (to be checked against the row).
    func row(household: String, key: Key) -> Int64? {
        state.withLock { state in
            let household = state.memo.key(household)
            switch key {
            case .uuid(let k): return state.households[household]?.uuids[k]
            case .text(let s): return state.households[household]?.texts[s]
            }
        }
    }

    /// Records that row `row` holds `key` in `household`.
    func insert(household: String, key: Key, row: Int64) {
        state.withLock { state in
            let household = state.memo.key(household)
            let old: Int64?
            switch key {
            case .uuid(let k): old = state.households[household, default: Household()].uuids.updateValue(row, forKey: k)
            case .text(let s): old = state.households[household, default: Household()].texts.updateValue(row, forKey: s)
            }
            if old == nil { state.count += 1 }
        }
    }

    /// How many keys are held (those read as absent included).
    var count: Int { state.withLock { $0.count } }
}
