import SQLiteKit

extension LedgerStore {
    /// Forward-only schema of a device store.
    static let migrations: [Migration] = [
        Migration(version: 1, sql: """
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE household (
                id TEXT PRIMARY KEY, name TEXT NOT NULL, currency TEXT NOT NULL,
                owner_account_id TEXT, change_tag TEXT, role TEXT, permission TEXT,
                shared INTEGER NOT NULL DEFAULT 0,
                created_at INTEGER NOT NULL, modified_at INTEGER NOT NULL);
            CREATE TABLE children (
                id TEXT PRIMARY KEY, name TEXT NOT NULL, sort_order INTEGER NOT NULL,
                archived INTEGER NOT NULL, created_at INTEGER NOT NULL,
                modified_at INTEGER NOT NULL, modified_by TEXT NOT NULL, change_tag TEXT);
            CREATE TABLE transactions (
                id TEXT PRIMARY KEY, child_id TEXT NOT NULL REFERENCES children(id),
                amount_cents INTEGER NOT NULL, note TEXT NOT NULL, source TEXT NOT NULL,
                created_at INTEGER NOT NULL, recorded_at INTEGER, author_account_id TEXT,
                reverses_id TEXT);
            CREATE UNIQUE INDEX transactions_reverses ON transactions(reverses_id) WHERE reverses_id IS NOT NULL;
            CREATE INDEX transactions_child ON transactions(child_id, created_at);
            -- One row per record with local changes; `version` grows on every edit, so a push
            -- reads the record's current state and five renames become one.
            CREATE TABLE pending (kind TEXT NOT NULL, id TEXT NOT NULL, version INTEGER NOT NULL,
                PRIMARY KEY (kind, id));
            -- Pulled transactions whose child has not arrived yet.
            CREATE TABLE deferred (id TEXT PRIMARY KEY, child_id TEXT NOT NULL, json TEXT NOT NULL);
            -- Local records the server refused for good; kept, never silently lost.
            CREATE TABLE rejected (kind TEXT NOT NULL, id TEXT NOT NULL, code TEXT NOT NULL,
                json TEXT NOT NULL, rejected_at INTEGER NOT NULL, PRIMARY KEY (kind, id));
            CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
            """),
    ]
}
