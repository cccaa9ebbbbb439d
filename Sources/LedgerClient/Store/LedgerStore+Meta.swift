import LedgerModel
import SQLiteKit

extension LedgerStore {
    /// The stored value of `key`, nil when absent.
    func string(_ key: MetaKey) throws -> String? {
        if let value = memo(key) { return value }
        return try db.queryOne("SELECT value FROM meta WHERE key = ?", [.text(key.rawValue)])?.optionalString(0)
    }

    /// Stores `value` under `key`; nil removes it.
    func set(_ key: MetaKey, _ value: String?) throws {
        readMemo = nil
        if let value {
            try db.run("INSERT INTO meta (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                       [.text(key.rawValue), .text(value)])
        } else {
            try db.run("DELETE FROM meta WHERE key = ?", [.text(key.rawValue)])
        }
    }

    /// The persisted phase.
    func phase() throws -> LedgerPhase {
        LedgerPhase(storageValue: try string(.phase) ?? "localOnly")
    }

    /// Persists `phase`.
    func setPhase(_ phase: LedgerPhase) throws {
        try set(.phase, phase.storageValue)
    }

    /// The current generation (see `MetaKey.generation`).
    func generation() throws -> Int64 {
        Int64(try string(.generation) ?? "0") ?? 0
    }

    /// Bumps the generation so pulls in flight are dropped.
    func bumpGeneration() throws {
        try set(.generation, String(try generation() + 1))
    }

    /// The attention reason, if shared editing is frozen.
    func attention() throws -> AttentionReason? {
        try string(.attention).flatMap(AttentionReason.init(rawValue:))
    }

    func setAttention(_ reason: AttentionReason?) throws {
        try set(.attention, reason?.rawValue)
    }

    /// What the last sync attempt said about the server; nil when nothing (an unknown stored
    /// value reads as nothing).
    func lastOutcome() throws -> SyncOutcome? {
        try string(.lastOutcome).flatMap(SyncOutcome.init(rawValue:))
    }

    func setLastOutcome(_ outcome: SyncOutcome?) throws {
        try set(.lastOutcome, outcome?.rawValue)
    }

    /// The newest child `modifiedAt` this device has seen, local or remote.
    func newestSeenModifiedAt() throws -> Int64? {
        let stored = Int64(try string(.newestSeenModifiedAt) ?? "")
        let local = try db.queryOne("SELECT MAX(modified_at) FROM children")?.optionalInt(0)
        switch (stored, local) {
        case let (a?, b?): return max(a, b)
        case let (a?, nil): return a
        case let (nil, b): return b
        }
    }

    /// Records that a child version stamped `modifiedAt` was seen.
    func noteSeen(modifiedAt: Int64) throws {
        if let current = Int64(try string(.newestSeenModifiedAt) ?? ""), current >= modifiedAt { return }
        try set(.newestSeenModifiedAt, String(modifiedAt))
    }
}
