import Foundation
import LedgerModel
import SQLiteKit

/// One device's durable state in one SQLite file: the replica (household, children,
/// transactions), the pending queue, deferred records and sync state. Not thread-safe: use one
/// store from one thread at a time (open a second store on the same file for another thread).
final class LedgerStore {
    /// The SQLite connection; every multi-row change goes through `transaction`.
    let db: SQLiteConnection
    /// The file path (`:memory:` for a private in-memory store).
    let path: String

    /// Keys of the `meta` table.
    enum Key: String, Sendable {
        case deviceId = "device_id"
        case serverURL = "server_url"
        case token
        case tokenId = "token_id"
        /// The account this ledger is pinned to (never rebound silently).
        case accountId = "account_id"
        case accountHandle = "account_handle"
        /// The account of the current token when it differs from `accountId`.
        case signedInAccountId = "signed_in_account_id"
        case signedInAccountHandle = "signed_in_account_handle"
        /// The pinned account's token and its id, kept while another account is signed in
        /// so that the device can go back to the ledger's account (`login --pinned`).
        case pinnedToken = "pinned_token"
        case pinnedTokenId = "pinned_token_id"
        case phase
        case syncToken = "sync_token"
        /// Bumped whenever the household or mode changes; a pull started under another
        /// generation is dropped.
        case generation
        case attention
        /// `offline`, `unauthenticated` or empty: the outcome of the last sync attempt.
        case lastOutcome = "last_outcome"
        case lastSyncAt = "last_sync_at"
        case newestSeenModifiedAt = "newest_seen_modified_at"
        /// While a join runs: the phase (and, after an account switch, the pinned account) to
        /// return to if the invitation turns out to be withdrawn.
        case joinPreviousPhase = "join_previous_phase"
        case joinPreviousAccountId = "join_previous_account_id"
        case joinPreviousAccountHandle = "join_previous_account_handle"
        /// While a join fetches: the feed token its staged pages reached, and the household
        /// (with the caller's access) as the feed last described it, as JSON.
        case joinStageToken = "join_stage_token"
        case joinStageHousehold = "join_stage_household"
    }

    /// Opens (creating when absent) the store at `path` and brings its schema up to date.
    /// A new store gets a fresh device id and an empty local household. `busyTimeoutMs` is how
    /// long a write waits for another connection on the same file (another process) to finish.
    init(path: String, now: Int64 = Timestamp.nowMs(), busyTimeoutMs: Int32 = 5000) throws {
        self.path = path
        self.db = try SQLiteConnection(path: path, mode: .readWrite, busyTimeoutMs: busyTimeoutMs)
        try Migrator.migrate(db, LedgerStore.migrations)
        try db.transaction {
            if try string(.deviceId) == nil {
                try set(.deviceId, UUID().lowercased)
                try set(.phase, LedgerPhase.localOnly.storageValue)
                try set(.generation, "0")
            }
            if try db.queryOne("SELECT COUNT(*) FROM household")?.int(0) == 0 {
                try db.run("""
                    INSERT INTO household (id, name, currency, shared, created_at, modified_at)
                    VALUES (?, 'Family', 'USD', 0, ?, ?)
                    """, [.text(UUID().lowercased), .integer(now), .integer(now)])
            }
        }
    }

    /// Runs `body` with commits that are not flushed to disk one by one (`synchronous=NORMAL`:
    /// the WAL is flushed at checkpoints; a power cut may lose the last commits, never
    /// consistency). For work that a kill or power cut simply resumes, such as a join's staged
    /// pages.
    func withUnflushedCommits<T>(_ body: () throws -> T) throws -> T {
        try db.execute("PRAGMA synchronous = NORMAL")
        defer { try? db.execute("PRAGMA synchronous = FULL") }
        return try body()
    }

    /// Runs `body` in one SQLite transaction (nested calls become savepoints).
    @discardableResult
    func transaction<T>(_ body: () throws -> T) throws -> T {
        try db.transaction(body)
    }

    // MARK: Meta

    /// The stored value of `key`, nil when absent.
    func string(_ key: Key) throws -> String? {
        try db.queryOne("SELECT value FROM meta WHERE key = ?", [.text(key.rawValue)])?.optionalString(0)
    }

    /// Stores `value` under `key`; nil removes it.
    func set(_ key: Key, _ value: String?) throws {
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

    /// Persists `phase` and bumps the generation when the mode changes.
    func setPhase(_ phase: LedgerPhase) throws {
        try set(.phase, phase.storageValue)
    }

    /// The current generation (see `Key.generation`).
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
