import SQLiteKit

extension LedgerStore {
    /// The index behind history and balances; a join's bulk copy drops and rebuilds it.
    static let transactionsChildIndex = "CREATE INDEX transactions_child ON transactions(child_id, created_at)"

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
            \(transactionsChildIndex);
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
        Migration(version: 2, sql: """
            -- Each child's balance, kept equal to the sum of its transactions by triggers, so it
            -- changes in the same local transaction as the rows and reading it costs one row.
            ALTER TABLE children ADD COLUMN balance_cents INTEGER NOT NULL DEFAULT 0;
            UPDATE children SET balance_cents =
                (SELECT COALESCE(SUM(amount_cents), 0) FROM transactions t WHERE t.child_id = children.id);
            CREATE TRIGGER transactions_balance_insert AFTER INSERT ON transactions BEGIN
                UPDATE children SET balance_cents = balance_cents + NEW.amount_cents WHERE id = NEW.child_id;
            END;
            CREATE TRIGGER transactions_balance_delete AFTER DELETE ON transactions BEGIN
                UPDATE children SET balance_cents = balance_cents - OLD.amount_cents WHERE id = OLD.child_id;
            END;
            CREATE TRIGGER transactions_balance_update AFTER UPDATE OF child_id, amount_cents ON transactions BEGIN
                UPDATE children SET balance_cents = balance_cents - OLD.amount_cents WHERE id = OLD.child_id;
                UPDATE children SET balance_cents = balance_cents + NEW.amount_cents WHERE id = NEW.child_id;
            END;
            -- Why the server refused a change, in words, next to its code.
            ALTER TABLE rejected ADD COLUMN detail TEXT NOT NULL DEFAULT '';
            -- Pulled records (kind child or transaction) that could not be merged, and feed pages
            -- (kind page, id = the token they were asked from) that could not be read: kept
            -- for the user to see until a readable version arrives or they are dismissed.
            CREATE TABLE unmerged (kind TEXT NOT NULL, id TEXT NOT NULL, reason TEXT NOT NULL,
                json TEXT NOT NULL, seen_at INTEGER NOT NULL, PRIMARY KEY (kind, id));
            """),
        Migration(version: 3, sql: """
            -- A join's first fetch, page by page (each page one local transaction with the token
            -- it reached, so a kill resumes where it stopped); moved into the replica in one
            -- transaction once the last page arrived.
            CREATE TABLE join_children (
                id TEXT PRIMARY KEY, name TEXT NOT NULL, sort_order INTEGER NOT NULL,
                archived INTEGER NOT NULL, created_at INTEGER NOT NULL,
                modified_at INTEGER NOT NULL, modified_by TEXT NOT NULL, change_tag TEXT);
            -- Appended in feed order without an index (the feed names each transaction once);
            -- the copy into `transactions` sorts it.
            CREATE TABLE join_transactions (
                id TEXT NOT NULL, child_id TEXT NOT NULL, amount_cents INTEGER NOT NULL,
                note TEXT NOT NULL, source TEXT NOT NULL, created_at INTEGER NOT NULL,
                recorded_at INTEGER, author_account_id TEXT, reverses_id TEXT);
            """),
        Migration(version: 4, sql: """
            -- Allowance and interest schedules (API.md v1.2). The payer columns are this device's
            -- own: the date its current terms pay from and the last date it paid or skipped
            -- (`ScheduleState`). A deleted schedule stays as a row (deleted = 1) so its paid
            -- periods keep their schedule and a late upload of the deletion still happens.
            CREATE TABLE schedules (
                id TEXT PRIMARY KEY, child_id TEXT NOT NULL, kind TEXT NOT NULL,
                amount_cents INTEGER, rate_basis_points INTEGER, cadence TEXT NOT NULL,
                first_date TEXT NOT NULL, time_zone TEXT NOT NULL, end_date TEXT,
                note TEXT NOT NULL DEFAULT '', paused INTEGER NOT NULL, split TEXT,
                next_due_date TEXT, deleted INTEGER NOT NULL DEFAULT 0,
                created_at INTEGER NOT NULL, modified_at INTEGER NOT NULL, modified_by TEXT NOT NULL,
                change_tag TEXT, terms_from TEXT NOT NULL, last_settled TEXT);
            CREATE INDEX schedules_child ON schedules(child_id);
            -- Pots of a child; the default pot (UUIDv5(N, "pot:" + childId)) needs no row.
            CREATE TABLE pots (
                id TEXT PRIMARY KEY, child_id TEXT NOT NULL, name TEXT NOT NULL,
                target_cents INTEGER, target_date TEXT, archived INTEGER NOT NULL DEFAULT 0,
                created_at INTEGER NOT NULL, modified_at INTEGER NOT NULL, modified_by TEXT NOT NULL,
                change_tag TEXT);
            CREATE INDEX pots_child ON pots(child_id);
            -- The pot a transaction belongs to; NULL for the child's default pot.
            ALTER TABLE transactions ADD COLUMN pot_id TEXT;
            ALTER TABLE join_transactions ADD COLUMN pot_id TEXT;
            -- Transfers made on this device: the push keeps both halves in one batch.
            CREATE TABLE transfers (id TEXT PRIMARY KEY, out_id TEXT NOT NULL, in_id TEXT NOT NULL);
            CREATE INDEX transfers_out ON transfers(out_id);
            CREATE INDEX transfers_in ON transfers(in_id);
            -- Schedules and pots of a join's first fetch, as their feed JSON.
            CREATE TABLE join_records (kind TEXT NOT NULL, id TEXT NOT NULL, json TEXT NOT NULL,
                PRIMARY KEY (kind, id));
            """),
        Migration(version: 5, sql: """
            -- A queued schedule edit that asked for back pay: the push says so (`backPay`).
            ALTER TABLE schedules ADD COLUMN back_pay INTEGER NOT NULL DEFAULT 0;
            """),
        Migration(version: 6, sql: """
            -- Children's requests (spend or chore) and parents' decisions (API.md "Child devices
            -- and requests"). An approval writes the payment `payment_id` in the same local
            -- transaction; `decision_note` is a decline's note.
            CREATE TABLE requests (
                id TEXT PRIMARY KEY, child_id TEXT NOT NULL, kind TEXT NOT NULL,
                amount_cents INTEGER NOT NULL, requested_cents INTEGER NOT NULL,
                note TEXT NOT NULL DEFAULT '', status TEXT NOT NULL,
                decided_by TEXT, decided_at INTEGER, decision_note TEXT, payment_id TEXT,
                created_by TEXT, created_at INTEGER NOT NULL, modified_at INTEGER NOT NULL,
                change_tag TEXT);
            CREATE INDEX requests_child ON requests(child_id, created_at);
            """),
        Migration(version: 7, sql: """
            -- The transactions of pots other than the default one (whose pot_id is NULL), so a
            -- child's pot balances cost the rows outside its default pot, not its whole ledger.
            CREATE INDEX transactions_pot ON transactions(child_id, pot_id, amount_cents) WHERE pot_id IS NOT NULL;
            """),
    ]
}
