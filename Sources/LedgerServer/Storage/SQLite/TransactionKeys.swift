import Foundation
import LedgerModel
import SQLiteKit
import Synchronization

/// The SQLite ledger's id index, held in memory instead of in the database (schema
/// version 8): for each household, a transaction's key (`reversal_id`, the id its reversal
/// takes) → its row number.
///
/// Why: the keys are SHA-1 values, random even when ids are not, so in a B-tree each new
/// transaction landed on a leaf of its own. A group commit of thirty POSTs wrote thirty of
/// those leaves to the WAL, synced them, and the checkpointer copied them back: on a
/// ledger of 1.5 million transactions most of the difference between a durable POST and
/// one with fsync disabled (measured: 37.1 against 31.1 µs of server CPU per POST with
/// the index's inserts made sequential, and 0.83 against 0.91 of the no-fsync
/// throughput). Here an insert is a dictionary entry.
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
/// Memory: about 45 bytes per transaction (a 16-byte key and an 8-byte row number in a
/// dictionary at most three quarters full), ~45 MB per million. Loading a million takes
/// about half a second at start.
final class TransactionKeys: Sendable {
    /// A stored key: a UUID's 16 bytes (every key since version 7 but those of ids that
    /// are not UUIDs), or the text key of an id that is not one.
    enum Key: Hashable, Sendable {
        case uuid(UUIDKey)
        case text(String)

        /// The key `Schema.reversalKey` stores for `reversalId`.
        init(reversalId: String) {
            if let u = LedgerIDs.parse(reversalId) { self = .uuid(UUIDKey(u)) } else { self = .text(reversalId) }
        }

        /// The key of a stored `reversal_id` value (nil for a value no key can have).
        init?(stored value: SQLiteValue) {
            switch value {
            case .blob(let b) where b.count == 16: self = .uuid(UUIDKey(bytes: b))
            case .text(let s): self = .text(s)
            default: return nil
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

        init(bytes b: [UInt8]) {
            precondition(b.count == 16)
            var h: UInt64 = 0, l: UInt64 = 0
            for i in 0..<8 { h = h << 8 | UInt64(b[i]); l = l << 8 | UInt64(b[i + 8]) }
            high = h
            low = l
        }

        var bytes: [UInt8] {
            (0..<16).map { i in UInt8(truncatingIfNeeded: (i < 8 ? high : low) >> (8 * (7 - UInt64(i % 8)))) }
        }

        func hash(into hasher: inout Hasher) { hasher.combine(high) }
        static func == (a: UUIDKey, b: UUIDKey) -> Bool { a.high == b.high && a.low == b.low }
    }

    private struct Household {
        var uuids: [UUIDKey: Int64] = [:]
        var texts: [String: Int64] = [:]
    }

    private struct State {
        /// By household id.
        var households: [String: Household] = [:]
        var count = 0
    }

    private let state = Mutex(State())

    init() {}

    /// Every transaction row of `db` (rows whose household is missing are left out: they
    /// belong to no ledger, and `check` reports them).
    static func load(_ db: SQLiteConnection) throws -> TransactionKeys {
        let keys = TransactionKeys()
        try keys.state.withLock { state in
            // Each household's dictionary sized once (by the household index), not grown
            // by doubling as the rows come.
            for r in try db.query("""
                SELECT h.id, COUNT(*) FROM transactions t JOIN households h ON h.ledger_key = t.household_key GROUP BY h.id
                """) {
                state.households[r.string(0)] = Household(uuids: Dictionary(minimumCapacity: Int(r.int(1))))
            }
            let rows = try db.prepare("""
                SELECT h.id, t.reversal_id, t.n FROM transactions t JOIN households h ON h.ledger_key = t.household_key
                """)
            try rows.bind([])
            while try rows.step() {
                let row = rows.row()
                guard let key = Key(stored: row.values[1]) else { continue }
                switch key {
                case .uuid(let k): state.households[row.string(0), default: Household()].uuids[k] = row.int(2)
                case .text(let s): state.households[row.string(0), default: Household()].texts[s] = row.int(2)
                }
                state.count += 1
            }
            try rows.finish()
        }
        return keys
    }

    /// The row number last recorded for `key` in `household` (to be checked against the row).
    func row(household: String, key: Key) -> Int64? {
        state.withLock { state in
            switch key {
            case .uuid(let k): return state.households[household]?.uuids[k]
            case .text(let s): return state.households[household]?.texts[s]
            }
        }
    }

    /// Records that row `row` holds `key` in `household`.
    func insert(household: String, key: Key, row: Int64) {
        state.withLock { state in
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
