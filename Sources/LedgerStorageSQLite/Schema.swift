import Foundation
import LedgerCore
import LedgerModel
import SQLiteKit

/// The server's SQLite schema as forward-only migrations.
enum Schema {
    static let migrations: [Migration] = [
        Migration(version: 1, sql: """
        CREATE TABLE accounts (
            id TEXT PRIMARY KEY,
            handle TEXT NOT NULL UNIQUE,
            display_name TEXT NOT NULL,
            created_at INTEGER NOT NULL
        );
        CREATE TABLE tokens (
            id TEXT PRIMARY KEY,
            account_id TEXT NOT NULL REFERENCES accounts(id),
            hash BLOB NOT NULL UNIQUE,
            device_name TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            last_used_at INTEGER,
            revoked_at INTEGER
        );
        CREATE INDEX tokens_account ON tokens(account_id);
        CREATE TABLE households (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL,
            currency TEXT NOT NULL,
            owner_account_id TEXT NOT NULL REFERENCES accounts(id),
            created_at INTEGER NOT NULL,
            modified_at INTEGER NOT NULL,
            change_tag TEXT NOT NULL,
            incarnation INTEGER NOT NULL,
            seq INTEGER NOT NULL DEFAULT 0,
            household_seq INTEGER NOT NULL DEFAULT 0,
            shared INTEGER NOT NULL DEFAULT 0
        );
        CREATE INDEX households_owner ON households(owner_account_id);
        CREATE TABLE children (
            id TEXT PRIMARY KEY,
            household_id TEXT NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            sort_order INTEGER NOT NULL,
            archived INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            modified_at INTEGER NOT NULL,
            modified_by TEXT NOT NULL,
            change_tag TEXT NOT NULL,
            balance_cents INTEGER NOT NULL DEFAULT 0,
            seq INTEGER NOT NULL
        );
        CREATE INDEX children_household ON children(household_id, sort_order);
        CREATE INDEX children_feed ON children(household_id, seq);
        CREATE TABLE transactions (
            n INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            household_id TEXT NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            child_id TEXT NOT NULL REFERENCES children(id) ON DELETE CASCADE,
            amount_cents INTEGER NOT NULL,
            note TEXT NOT NULL,
            source TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            recorded_at INTEGER NOT NULL,
            author_account_id TEXT NOT NULL,
            reverses_id TEXT UNIQUE,
            reversed_by_id TEXT,
            seq INTEGER NOT NULL
        );
        CREATE INDEX transactions_child ON transactions(child_id, n);
        CREATE INDEX transactions_household ON transactions(household_id, n);
        CREATE INDEX transactions_feed ON transactions(household_id, seq);
        CREATE TABLE participants (
            household_id TEXT NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            account_id TEXT NOT NULL REFERENCES accounts(id),
            permission TEXT NOT NULL,
            status TEXT NOT NULL,
            invitation_id TEXT NOT NULL UNIQUE,
            invited_at INTEGER NOT NULL,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (household_id, account_id)
        );
        CREATE INDEX participants_account ON participants(account_id, status);
        CREATE TABLE subscriptions (
            household_id TEXT PRIMARY KEY REFERENCES households(id) ON DELETE CASCADE,
            signed_transaction TEXT NOT NULL,
            product_id TEXT NOT NULL,
            original_transaction_id TEXT NOT NULL,
            expires_at INTEGER,
            environment TEXT NOT NULL,
            verified_at INTEGER NOT NULL,
            granted_by TEXT NOT NULL
        );
        CREATE TABLE device_sync (
            token_id TEXT NOT NULL,
            household_id TEXT NOT NULL,
            last_pull_at INTEGER,
            last_push_at INTEGER,
            last_pull_seq INTEGER NOT NULL DEFAULT 0,
            PRIMARY KEY (token_id, household_id)
        );
        """),
        // When a participant last accepted an invitation: revoked or departed participants
        // who never accepted were never members (404, not 403). Rows from before this
        // version that were revoked or left are taken to have accepted.
        Migration(version: 2, sql: """
        ALTER TABLE participants ADD COLUMN accepted_at INTEGER;
        UPDATE participants SET accepted_at = updated_at WHERE status IN ('accepted', 'revoked', 'left');
        """),
        // "Never two reversals of one transaction" as a partial unique index: the column's
        // UNIQUE constraint indexed every row, reversal or not (one more index entry per
        // insert, about 6% of the writer's work). SQLite cannot drop a column constraint,
        // so the table is rebuilt once, rows and row numbers (cursors) unchanged. The
        // indexes, the unique one on `id` included, are built after the copy (sorted
        // builds: about 7 s for 1,000,000 transactions instead of 15 s).
        Migration(version: 3, sql: """
        CREATE TABLE transactions_v3 (
            n INTEGER PRIMARY KEY,
            id TEXT NOT NULL,
            household_id TEXT NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            child_id TEXT NOT NULL REFERENCES children(id) ON DELETE CASCADE,
            amount_cents INTEGER NOT NULL,
            note TEXT NOT NULL,
            source TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            recorded_at INTEGER NOT NULL,
            author_account_id TEXT NOT NULL,
            reverses_id TEXT,
            reversed_by_id TEXT,
            seq INTEGER NOT NULL
        );
        INSERT INTO transactions_v3 (n, id, household_id, child_id, amount_cents, note, source, created_at, recorded_at,
                                     author_account_id, reverses_id, reversed_by_id, seq)
            SELECT n, id, household_id, child_id, amount_cents, note, source, created_at, recorded_at,
                   author_account_id, reverses_id, reversed_by_id, seq FROM transactions ORDER BY n;
        DROP TABLE transactions;
        ALTER TABLE transactions_v3 RENAME TO transactions;
        CREATE UNIQUE INDEX transactions_id ON transactions(id);
        CREATE INDEX transactions_child ON transactions(child_id, n);
        CREATE INDEX transactions_household ON transactions(household_id, n);
        CREATE INDEX transactions_feed ON transactions(household_id, seq);
        CREATE UNIQUE INDEX transactions_reverses ON transactions(reverses_id) WHERE reverses_id IS NOT NULL;
        """),
        // Record identity is (household, id): an id taken in one household never blocks,
        // conflicts with or reveals a record of another. Children are keyed by
        // (household_id, id), and a transaction's child reference names both.
        //
        // A transaction's key is `reversal_id` = UUIDv5("reversal:" + id), the id its
        // reversal has: one-to-one with `id`, so the unique (household_id, reversal_id)
        // index keeps ids unique per household and finds a row by id, and the same index
        // answers "is this id reserved for the reversal of a transaction of this
        // household" — one random-key index per insert, as before, not two. Lookups by id
        // go through `reversal_id` (SQLiteLedgerTransaction.transaction(household:id:)).
        //
        // Both tables are rebuilt; rows, row numbers (cursors), reversals and balances are
        // unchanged. Old `children` is renamed first so that dropping it cannot cascade
        // into the ledger (the rename moves the old ledger's reference with it).
        Migration(version: 4, sql: """
        ALTER TABLE children RENAME TO children_v3;
        DROP INDEX children_household;
        DROP INDEX children_feed;
        CREATE TABLE children (
            id TEXT NOT NULL,
            household_id TEXT NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            name TEXT NOT NULL,
            sort_order INTEGER NOT NULL,
            archived INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            modified_at INTEGER NOT NULL,
            modified_by TEXT NOT NULL,
            change_tag TEXT NOT NULL,
            balance_cents INTEGER NOT NULL DEFAULT 0,
            seq INTEGER NOT NULL,
            PRIMARY KEY (household_id, id)
        );
        INSERT INTO children (rowid, id, household_id, name, sort_order, archived, created_at, modified_at, modified_by,
                              change_tag, balance_cents, seq)
            SELECT rowid, id, household_id, name, sort_order, archived, created_at, modified_at, modified_by,
                   change_tag, balance_cents, seq FROM children_v3 ORDER BY rowid;
        CREATE TABLE transactions_v4 (
            n INTEGER PRIMARY KEY,
            id TEXT NOT NULL,
            household_id TEXT NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            child_id TEXT NOT NULL,
            amount_cents INTEGER NOT NULL,
            note TEXT NOT NULL,
            source TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            recorded_at INTEGER NOT NULL,
            author_account_id TEXT NOT NULL,
            reverses_id TEXT,
            reversed_by_id TEXT,
            seq INTEGER NOT NULL,
            reversal_id TEXT NOT NULL,
            FOREIGN KEY (household_id, child_id) REFERENCES children(household_id, id) ON DELETE CASCADE
        );
        INSERT INTO transactions_v4 (n, id, household_id, child_id, amount_cents, note, source, created_at, recorded_at,
                                     author_account_id, reverses_id, reversed_by_id, seq, reversal_id)
            SELECT n, id, household_id, child_id, amount_cents, note, source, created_at, recorded_at,
                   author_account_id, reverses_id, reversed_by_id, seq,
                   COALESCE(\(Schema.reversalIdFunction)(id), 'not-a-uuid:' || id) FROM transactions ORDER BY n;
        DROP TABLE transactions;
        DROP TABLE children_v3;
        ALTER TABLE transactions_v4 RENAME TO transactions;
        CREATE INDEX children_household ON children(household_id, sort_order);
        CREATE INDEX children_feed ON children(household_id, seq);
        CREATE UNIQUE INDEX transactions_id ON transactions(household_id, reversal_id);
        CREATE INDEX transactions_child ON transactions(household_id, child_id, n);
        CREATE INDEX transactions_household ON transactions(household_id, n);
        CREATE INDEX transactions_feed ON transactions(household_id, seq);
        CREATE UNIQUE INDEX transactions_reverses ON transactions(household_id, reverses_id) WHERE reverses_id IS NOT NULL;
        -- Always empty: the writer's probe for free space after a write failed for lack of it.
        CREATE TABLE storage_probe (bytes BLOB NOT NULL);
        """, prepare: defineFunctions),
        // App Store purchases as the App Store tells their life: the newest verified event
        // per original transaction (an owner's upload or a Server Notification), ordered by
        // (signedDate, event key); households link to a purchase through `subscriptions`.
        // Every verified notification is remembered by its UUID (replays change nothing).
        // Uploads stored before this version become the purchases' first events.
        Migration(version: 5, sql: """
        CREATE TABLE app_store_purchases (
            original_transaction_id TEXT PRIMARY KEY,
            environment TEXT NOT NULL,
            product_id TEXT NOT NULL,
            expires_at INTEGER,
            revoked_at INTEGER,
            grace_until INTEGER,
            billing_retry INTEGER NOT NULL DEFAULT 0,
            auto_renew INTEGER,
            apple_status INTEGER,
            event_type TEXT,
            event_subtype TEXT,
            event_signed_date INTEGER NOT NULL,
            event_key TEXT NOT NULL,
            source TEXT NOT NULL,
            signed_transaction TEXT NOT NULL,
            signed_renewal_info TEXT,
            updated_at INTEGER NOT NULL
        );
        CREATE INDEX app_store_purchases_updated ON app_store_purchases(updated_at);
        CREATE TABLE app_store_notifications (
            notification_uuid TEXT PRIMARY KEY,
            notification_type TEXT NOT NULL,
            subtype TEXT,
            original_transaction_id TEXT,
            signed_date INTEGER NOT NULL,
            received_at INTEGER NOT NULL,
            outcome TEXT NOT NULL
        );
        CREATE INDEX app_store_notifications_received ON app_store_notifications(received_at);
        CREATE INDEX subscriptions_original_transaction ON subscriptions(original_transaction_id);
        INSERT OR IGNORE INTO app_store_purchases (original_transaction_id, environment, product_id, expires_at,
                                                   event_signed_date, event_key, source, signed_transaction, updated_at)
            SELECT original_transaction_id, environment, product_id, expires_at, 0, '', 'upload', signed_transaction, verified_at
            FROM subscriptions ORDER BY verified_at DESC;
        """),
        // The ledger's rows name their household by a small integer key instead of its
        // 36-character id, and carry no foreign keys. The household id led each of the
        // table's five indexes, so every insert wrote it five times more; shorter keys fill
        // fewer pages, and each page a commit changes is written to the WAL, synced and
        // copied back again. The two foreign-key probes per insert went too (measured on
        // SQLite's own work per insert: about a fifth less). What the foreign keys did,
        // the code does: the rules check a transaction's child (and so its household)
        // before writing it, deleting a household deletes its ledger first, and `check`
        // reports any row whose household or child is missing.
        //
        // `households.ledger_key` is the key: the row's rowid when this version ran, then
        // one more than the largest for each new household. It is a column, not the rowid
        // itself, which VACUUM may renumber. The rows keep their row numbers (cursors).
        Migration(version: 6, sql: """
        ALTER TABLE households ADD COLUMN ledger_key INTEGER;
        UPDATE households SET ledger_key = rowid;
        CREATE UNIQUE INDEX households_ledger_key ON households(ledger_key);
        CREATE TABLE transactions_v6 (
            n INTEGER PRIMARY KEY,
            household_key INTEGER NOT NULL,
            id TEXT NOT NULL,
            child_id TEXT NOT NULL,
            amount_cents INTEGER NOT NULL,
            note TEXT NOT NULL,
            source TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            recorded_at INTEGER NOT NULL,
            author_account_id TEXT NOT NULL,
            reverses_id TEXT,
            reversed_by_id TEXT,
            seq INTEGER NOT NULL,
            reversal_id TEXT NOT NULL
        );
        INSERT INTO transactions_v6 (n, household_key, id, child_id, amount_cents, note, source, created_at, recorded_at,
                                     author_account_id, reverses_id, reversed_by_id, seq, reversal_id)
            SELECT t.n, h.ledger_key, t.id, t.child_id, t.amount_cents, t.note, t.source, t.created_at, t.recorded_at,
                   t.author_account_id, t.reverses_id, t.reversed_by_id, t.seq, t.reversal_id
            FROM transactions t JOIN households h ON h.id = t.household_id ORDER BY t.n;
        DROP TABLE transactions;
        ALTER TABLE transactions_v6 RENAME TO transactions;
        CREATE UNIQUE INDEX transactions_id ON transactions(household_key, reversal_id);
        CREATE INDEX transactions_child ON transactions(household_key, child_id, n);
        CREATE INDEX transactions_household ON transactions(household_key, n);
        CREATE INDEX transactions_feed ON transactions(household_key, seq);
        CREATE UNIQUE INDEX transactions_reverses ON transactions(household_key, reverses_id) WHERE reverses_id IS NOT NULL;
        """),
        // A transaction's key, `reversal_id`, holds its UUID's 16 bytes instead of 36
        // characters (`Schema.reversalKey`). It leads the one index keyed by random values,
        // where each insert lands on a leaf of its own: the index shrinks by about 40 %, so
        // a commit's leaves are fewer to keep in the writer's cache, to write to the WAL and
        // to copy back. The rows are changed in place (their row numbers stay); the index
        // is dropped first and built again once, sorted, instead of moved key by key.
        Migration(version: 7, sql: """
        DROP INDEX transactions_id;
        UPDATE transactions SET reversal_id = COALESCE(\(uuidBytesFunction)(reversal_id), reversal_id);
        CREATE UNIQUE INDEX transactions_id ON transactions(household_key, reversal_id);
        """, prepare: defineFunctions),
        // The id index leaves the database: the server holds it in memory
        // (`TransactionKeys`: loaded at start, added to by the writer, every entry checked
        // against its row). Its keys are SHA-1 values, so in a B-tree every insert rewrote
        // a random leaf of its own, which each group commit wrote to the WAL and synced
        // and the checkpointer copied back. Uniqueness is the writer's to keep: it looks
        // every key up before it inserts one, and `check` reports any key held twice.
        // Admin commands and tests without the server's index find a transaction among
        // its household's rows.
        Migration(version: 8, sql: """
        DROP INDEX transactions_id;
        """),
        // The household index (household key, row number) goes: every new transaction was
        // written into it too, one of the three index leaves each group commit wrote to the
        // WAL, synced and copied back. The household's list, the one reader that needed its
        // order, merges its children's lists instead (the child index).
        Migration(version: 9, sql: """
        DROP INDEX transactions_household;
        """),
        // A purchase is keyed by (environment, original transaction id): the sandbox numbers
        // its transactions apart from production, and a Sandbox event must never change a
        // Production purchase. The table is rebuilt with the wider key; every row keeps the
        // environment it has. A household whose purchase row holds another environment than
        // its upload (a Sandbox event changed it before this version) gets its upload back as
        // that purchase's first event, as version 5 did for every upload.
        Migration(version: 10, sql: """
        CREATE TABLE app_store_purchases_v10 (
            original_transaction_id TEXT NOT NULL,
            environment TEXT NOT NULL,
            product_id TEXT NOT NULL,
            expires_at INTEGER,
            revoked_at INTEGER,
            grace_until INTEGER,
            billing_retry INTEGER NOT NULL DEFAULT 0,
            auto_renew INTEGER,
            apple_status INTEGER,
            event_type TEXT,
            event_subtype TEXT,
            event_signed_date INTEGER NOT NULL,
            event_key TEXT NOT NULL,
            source TEXT NOT NULL,
            signed_transaction TEXT NOT NULL,
            signed_renewal_info TEXT,
            updated_at INTEGER NOT NULL,
            PRIMARY KEY (environment, original_transaction_id)
        );
        INSERT INTO app_store_purchases_v10
            SELECT original_transaction_id, environment, product_id, expires_at, revoked_at, grace_until, billing_retry,
                   auto_renew, apple_status, event_type, event_subtype, event_signed_date, event_key, source,
                   signed_transaction, signed_renewal_info, updated_at
            FROM app_store_purchases;
        DROP TABLE app_store_purchases;
        ALTER TABLE app_store_purchases_v10 RENAME TO app_store_purchases;
        CREATE INDEX app_store_purchases_updated ON app_store_purchases(updated_at);
        INSERT OR IGNORE INTO app_store_purchases (original_transaction_id, environment, product_id, expires_at,
                                                   event_signed_date, event_key, source, signed_transaction, updated_at)
            SELECT original_transaction_id, environment, product_id, expires_at, 0, '', 'upload', signed_transaction, verified_at
            FROM subscriptions ORDER BY verified_at DESC;
        """),
        // Blocks: an account refuses invitations from another (declining with `block`).
        // Listed newest first per account. Tokens not revoked get an index of their own:
        // the per-account cap counts them and their list pages through them, however many
        // revoked ones the account left behind.
        Migration(version: 11, sql: """
        CREATE TABLE blocks (
            account_id TEXT NOT NULL REFERENCES accounts(id),
            blocked_account_id TEXT NOT NULL REFERENCES accounts(id),
            created_at INTEGER NOT NULL,
            PRIMARY KEY (account_id, blocked_account_id)
        ) WITHOUT ROWID;
        CREATE INDEX blocks_list ON blocks(account_id, created_at, blocked_account_id);
        CREATE INDEX tokens_live ON tokens(account_id, created_at, id) WHERE revoked_at IS NULL;
        """),
        // Identities (`LedgerStorage+Identities.swift`): OpenID Connect identities linked to
        // accounts, nonces of accepted ID tokens, Apple refresh tokens kept (sealed) for
        // revocation. Apple tokens name their account without a foreign key: a queued
        // revocation outlives the account it was queued for.
        Migration(version: 12, sql: """
        CREATE TABLE identities (
            id TEXT PRIMARY KEY,
            account_id TEXT NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            provider TEXT NOT NULL,
            issuer TEXT NOT NULL,
            subject TEXT NOT NULL,
            linked_at INTEGER NOT NULL,
            UNIQUE (issuer, subject)
        );
        CREATE INDEX identities_account ON identities(account_id, linked_at, id);
        CREATE TABLE identity_nonces (
            nonce_hash TEXT PRIMARY KEY,
            expires_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX identity_nonces_expiry ON identity_nonces(expires_at);
        CREATE TABLE apple_tokens (
            id TEXT PRIMARY KEY,
            account_id TEXT NOT NULL,
            identity_id TEXT,
            client_id TEXT NOT NULL,
            sealed BLOB NOT NULL,
            key_id TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            revoke_after INTEGER,
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT
        );
        CREATE INDEX apple_tokens_account ON apple_tokens(account_id);
        CREATE INDEX apple_tokens_identity ON apple_tokens(identity_id);
        CREATE INDEX apple_tokens_due ON apple_tokens(revoke_after) WHERE revoke_after IS NOT NULL;
        """),
        // How an account is reached besides its tokens, and how it ends. Link codes and
        // recovery codes are kept as SHA-256 only; a link code's bucket (its first two
        // characters) counts the failed redemptions that may void it. Attempt counters
        // hold the failures a limit counts, per scope and key (a client address, a handle),
        // in fixed windows. A deleted account's row stays (what it wrote keeps its id), with
        // a placeholder handle, and is listed in `deleted_accounts`; its handle is retired
        // for 30 days.
        Migration(version: 13, sql: """
        CREATE TABLE deleted_accounts (
            account_id TEXT PRIMARY KEY REFERENCES accounts(id),
            deleted_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE TABLE link_codes (
            hash BLOB PRIMARY KEY,
            bucket TEXT NOT NULL,
            account_id TEXT NOT NULL REFERENCES accounts(id),
            created_at INTEGER NOT NULL,
            expires_at INTEGER NOT NULL,
            failures INTEGER NOT NULL DEFAULT 0
        ) WITHOUT ROWID;
        CREATE INDEX link_codes_bucket ON link_codes(bucket);
        CREATE INDEX link_codes_account ON link_codes(account_id, created_at);
        CREATE INDEX link_codes_expiry ON link_codes(expires_at);
        CREATE TABLE recovery_codes (
            account_id TEXT NOT NULL REFERENCES accounts(id),
            hash BLOB NOT NULL,
            created_at INTEGER NOT NULL,
            used_at INTEGER,
            PRIMARY KEY (account_id, hash)
        ) WITHOUT ROWID;
        CREATE TABLE attempt_counters (
            scope TEXT NOT NULL,
            subject TEXT NOT NULL,
            window_start INTEGER NOT NULL,
            attempts INTEGER NOT NULL,
            PRIMARY KEY (scope, subject)
        ) WITHOUT ROWID;
        CREATE INDEX attempt_counters_window ON attempt_counters(scope, window_start);
        CREATE TABLE retired_handles (
            handle TEXT PRIMARY KEY,
            account_id TEXT NOT NULL,
            reserved_until INTEGER NOT NULL
        ) WITHOUT ROWID;
        """),
        // Push: a device token's registration with a Matrix push gateway, and the wake
        // outbox, written in the transaction of the change that wakes: one row per device and
        // household, kept with its quiet time; a change makes it due (now, or when its quiet
        // time ends) unless it is already; an attempt takes it by moving its due time to the
        // lease's end; an answer leaves it due no more, or due when the quiet time ends if a
        // change came meanwhile.
        Migration(version: 14, sql: """
        CREATE TABLE push_registrations (
            token_id TEXT PRIMARY KEY REFERENCES tokens(id),
            account_id TEXT NOT NULL,
            app_id TEXT NOT NULL,
            push_key TEXT NOT NULL,
            gateway TEXT NOT NULL,
            registered_at INTEGER NOT NULL
        ) WITHOUT ROWID;
        CREATE INDEX push_registrations_account ON push_registrations(account_id);
        CREATE UNIQUE INDEX push_registrations_key ON push_registrations(account_id, app_id, push_key);
        CREATE TABLE push_wakes (
            token_id TEXT NOT NULL REFERENCES push_registrations(token_id) ON DELETE CASCADE,
            household_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            sent_seq INTEGER NOT NULL DEFAULT 0,
            due_at INTEGER,
            quiet_until INTEGER NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0,
            queued_at INTEGER NOT NULL,
            PRIMARY KEY (token_id, household_id)
        );
        CREATE INDEX push_wakes_due ON push_wakes(due_at) WHERE due_at IS NOT NULL;
        """),
        // Allowance and interest schedules (`ScheduleRecord`): the columns the rules query,
        // the rest one JSON document. A deleted schedule stays as a tombstone for the change
        // feed. `due_at` is the instant its next date falls due (NULL: nothing to pay) — the
        // payment job's index.
        Migration(version: 15, sql: """
        CREATE TABLE schedules (
            household_id TEXT NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            id TEXT NOT NULL,
            child_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            deleted INTEGER NOT NULL DEFAULT 0,
            due_at INTEGER,
            created_at INTEGER NOT NULL,
            doc TEXT NOT NULL,
            PRIMARY KEY (household_id, id)
        ) WITHOUT ROWID;
        CREATE INDEX schedules_child ON schedules(household_id, child_id, created_at, id);
        CREATE INDEX schedules_feed ON schedules(household_id, seq);
        CREATE INDEX schedules_due ON schedules(due_at) WHERE due_at IS NOT NULL;
        """),
        // The database's incarnation: a random value, replaced whenever the database goes
        // back in time (`restore` installs a backup, `rewound` after anything else did), so
        // that sync positions handed out before are answered `history_rewound`. Records the
        // owner pushed back in another member's name ("restore from this device") are
        // marked in `restored_records` with who restored them.
        Migration(version: 16, sql: """
        CREATE TABLE database_incarnation (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            incarnation INTEGER NOT NULL,
            since INTEGER NOT NULL,
            reason TEXT NOT NULL
        );
        INSERT INTO database_incarnation (id, incarnation, since, reason)
            VALUES (1, random() & 9223372036854775807, CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER), 'created');
        CREATE TABLE restored_records (
            household_key INTEGER NOT NULL,
            kind TEXT NOT NULL,
            id TEXT NOT NULL,
            restored_by TEXT NOT NULL,
            restored_at INTEGER NOT NULL,
            PRIMARY KEY (household_key, kind, id)
        ) WITHOUT ROWID;
        """),
        // Pots (`PotRecord`): a child's pots beside its default pot, which has no row until it
        // is edited; a deleted pot stays as a tombstone for the change feed. A transaction
        // names its pot in `pot_id` (NULL: the child's default pot, as every earlier row is).
        // A pot's balance is the sum of its transactions (the child index, then the rows).
        Migration(version: 17, sql: """
        ALTER TABLE transactions ADD COLUMN pot_id TEXT;
        CREATE TABLE pots (
            household_id TEXT NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            id TEXT NOT NULL,
            child_id TEXT NOT NULL,
            name TEXT NOT NULL,
            target_cents INTEGER,
            target_date TEXT,
            archived INTEGER NOT NULL DEFAULT 0,
            deleted INTEGER NOT NULL DEFAULT 0,
            created_at INTEGER NOT NULL,
            modified_at INTEGER NOT NULL,
            modified_by TEXT NOT NULL,
            change_tag TEXT NOT NULL,
            seq INTEGER NOT NULL,
            PRIMARY KEY (household_id, id)
        ) WITHOUT ROWID;
        CREATE INDEX pots_child ON pots(household_id, child_id, created_at, id);
        CREATE INDEX pots_feed ON pots(household_id, seq);
        """),
        // Children's devices and requests (`ChildDeviceRecords.swift`). A link code issued
        // for a child's device keeps its child beside it; a child token belongs to no account
        // (its own table: nothing that lists, counts or revokes an account's tokens sees it)
        // and lives with its household. A request keeps the columns the rules query and the
        // rest as one document, like a schedule.
        Migration(version: 18, sql: """
        ALTER TABLE link_codes ADD COLUMN household_id TEXT;
        ALTER TABLE link_codes ADD COLUMN child_id TEXT;
        ALTER TABLE link_codes ADD COLUMN device_name TEXT;
        CREATE TABLE child_tokens (
            id TEXT PRIMARY KEY,
            household_id TEXT NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            child_id TEXT NOT NULL,
            hash BLOB NOT NULL UNIQUE,
            device_name TEXT NOT NULL,
            paired_by TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            revoked_at INTEGER
        );
        CREATE INDEX child_tokens_child ON child_tokens(household_id, child_id, created_at, id) WHERE revoked_at IS NULL;
        CREATE TABLE requests (
            household_id TEXT NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            id TEXT NOT NULL,
            child_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            status TEXT NOT NULL,
            payment_id TEXT NOT NULL,
            created_at INTEGER NOT NULL,
            doc TEXT NOT NULL,
            PRIMARY KEY (household_id, id)
        ) WITHOUT ROWID;
        CREATE INDEX requests_child ON requests(household_id, child_id, created_at, id);
        CREATE INDEX requests_feed ON requests(household_id, seq);
        CREATE INDEX requests_payment ON requests(household_id, payment_id);
        """),
        // A child's device registers for wakes too: `push_registrations` is rebuilt without
        // its reference to `tokens` (a child token lives in `child_tokens`), `account_id`
        // NULL for a child token's row, which names its household and child instead (it
        // goes with its household). `push_wakes` is rebuilt to refer to the new table.
        Migration(version: 19, sql: """
        ALTER TABLE push_wakes RENAME TO push_wakes_v18;
        ALTER TABLE push_registrations RENAME TO push_registrations_v18;
        DROP INDEX push_registrations_account;
        DROP INDEX push_registrations_key;
        DROP INDEX push_wakes_due;
        CREATE TABLE push_registrations (
            token_id TEXT PRIMARY KEY,
            account_id TEXT,
            household_id TEXT REFERENCES households(id) ON DELETE CASCADE,
            child_id TEXT,
            app_id TEXT NOT NULL,
            push_key TEXT NOT NULL,
            gateway TEXT NOT NULL,
            registered_at INTEGER NOT NULL,
            CHECK ((account_id IS NULL) = (household_id IS NOT NULL AND child_id IS NOT NULL))
        ) WITHOUT ROWID;
        CREATE INDEX push_registrations_account ON push_registrations(account_id);
        CREATE UNIQUE INDEX push_registrations_key ON push_registrations(account_id, app_id, push_key);
        CREATE INDEX push_registrations_household ON push_registrations(household_id) WHERE household_id IS NOT NULL;
        CREATE TABLE push_wakes (
            token_id TEXT NOT NULL REFERENCES push_registrations(token_id) ON DELETE CASCADE,
            household_id TEXT NOT NULL,
            seq INTEGER NOT NULL,
            sent_seq INTEGER NOT NULL DEFAULT 0,
            due_at INTEGER,
            quiet_until INTEGER NOT NULL DEFAULT 0,
            attempts INTEGER NOT NULL DEFAULT 0,
            queued_at INTEGER NOT NULL,
            PRIMARY KEY (token_id, household_id)
        );
        CREATE INDEX push_wakes_due ON push_wakes(due_at) WHERE due_at IS NOT NULL;
        INSERT INTO push_registrations (token_id, account_id, app_id, push_key, gateway, registered_at)
            SELECT token_id, account_id, app_id, push_key, gateway, registered_at FROM push_registrations_v18;
        INSERT INTO push_wakes (token_id, household_id, seq, sent_seq, due_at, quiet_until, attempts, queued_at)
            SELECT token_id, household_id, seq, sent_seq, due_at, quiet_until, attempts, queued_at FROM push_wakes_v18;
        DROP TABLE push_wakes_v18;
        DROP TABLE push_registrations_v18;
        """),
    ]
}

extension Schema {
    /// The ledger key of the household whose id is the statement's parameter `n`.
    static func ledgerKey(_ n: Int) -> String { "(SELECT ledger_key FROM households WHERE id = ?\(n))" }
    /// The next household's ledger key.
    static let nextLedgerKey = "(SELECT COALESCE(MAX(ledger_key), 0) + 1 FROM households)"
}

extension Schema {
    /// `kidledger_reversal_id(id)`: the deterministic reversal id of a transaction id
    /// (lowercase), NULL for text that is not a UUID. Defined per connection, for the
    /// version 4 data copy; no index or default of the schema calls it.
    static let reversalIdFunction = "kidledger_reversal_id"
    /// `kidledger_reversal_key(id)`: the key a transaction `id` is stored under since
    /// version 7 (`reversalKey` of its reversal id), NULL for text that is not a UUID. For `check`.
    static let reversalKeyFunction = "kidledger_reversal_key"
    /// `kidledger_uuid_bytes(text)`: the 16 bytes of a UUID written as text, NULL for other text.
    /// For the version 7 data change.
    static let uuidBytesFunction = "kidledger_uuid_bytes"

    @Sendable static func defineFunctions(_ db: SQLiteConnection) throws {
        try db.defineFunction(reversalIdFunction) { id in NewTransaction.reversalId(of: id) }
        try db.defineValueFunction(reversalKeyFunction) { id in
            LedgerIDs.parse(id).map { reversalKey(LedgerIDs.reversalID(of: $0, sha1: .openSSL)) } ?? .null
        }
        try db.defineValueFunction(uuidBytesFunction) { text in uuidBytes(text).map { .blob($0) } ?? .null }
    }

    /// How `transactions.reversal_id`, the ledger's random-key index, stores a reversal id
    /// since version 7: a UUID as its 16 bytes (a key written as 36 characters of text
    /// made the index half as large again, and each insert writes one of its leaves), any
    /// other key (`not-a-uuid:` and the id, for an id that is not a UUID) as text. Text
    /// and blobs never compare equal, so keys stay distinct.
    /// (`TransactionKeys.Key` is that form; the id index holds the same keys.)
    static func reversalKey(_ reversalId: String) -> SQLiteValue {
        TransactionKeys.Key(reversalId: reversalId).stored
    }

    /// The stored key of a reversal id that is a UUID.
    static func reversalKey(_ reversalId: UUID) -> SQLiteValue { TransactionKeys.Key.uuid(.init(reversalId)).stored }

    /// The 16 bytes of a UUID written 8-4-4-4-12 in hex digits (either case); nil for any other text.
    static func uuidBytes(_ text: String) -> [UInt8]? { LedgerIDs.parse(text).map { TransactionKeys.UUIDKey($0).bytes } }
}
