#if Postgres
import PostgresKit

/// The server's PostgreSQL schema as forward-only migrations (applied by `PGMigrator`
/// under an advisory lock, so several processes starting together apply each once).
///
/// Native types throughout: uuid ids, bigint amounts and sequence numbers, timestamptz
/// instants (millisecond values in, millisecond values out), booleans, identity columns
/// for the row numbers list cursors use. A record's identity is `(household_id, id)`.
/// `households.seq` is the household's change sequence: every write transaction locks
/// that row first, so per-household sequence order is commit order.
enum PostgresSchema {
    static let migrations: [PGMigrator.Step] = [
        (1, """
        CREATE TABLE accounts (
            id uuid PRIMARY KEY,
            handle text NOT NULL UNIQUE,
            display_name text NOT NULL,
            created_at timestamptz NOT NULL
        );
        CREATE TABLE tokens (
            id uuid PRIMARY KEY,
            account_id uuid NOT NULL REFERENCES accounts(id),
            hash bytea NOT NULL UNIQUE,
            device_name text NOT NULL,
            created_at timestamptz NOT NULL,
            last_used_at timestamptz,
            revoked_at timestamptz
        );
        CREATE INDEX tokens_account ON tokens(account_id);
        CREATE TABLE households (
            n bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            id uuid PRIMARY KEY,
            name text NOT NULL,
            currency text NOT NULL,
            owner_account_id uuid NOT NULL REFERENCES accounts(id),
            created_at timestamptz NOT NULL,
            modified_at timestamptz NOT NULL,
            change_tag text NOT NULL,
            incarnation bigint NOT NULL,
            seq bigint NOT NULL DEFAULT 0,
            household_seq bigint NOT NULL DEFAULT 0,
            shared boolean NOT NULL DEFAULT false
        );
        CREATE INDEX households_owner ON households(owner_account_id, n);
        CREATE TABLE children (
            household_id uuid NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            id uuid NOT NULL,
            name text NOT NULL,
            sort_order bigint NOT NULL,
            archived boolean NOT NULL DEFAULT false,
            created_at timestamptz NOT NULL,
            modified_at timestamptz NOT NULL,
            modified_by uuid NOT NULL,
            change_tag text NOT NULL,
            balance_cents bigint NOT NULL DEFAULT 0,
            seq bigint NOT NULL,
            PRIMARY KEY (household_id, id)
        );
        CREATE INDEX children_order ON children(household_id, sort_order, created_at, id);
        CREATE INDEX children_feed ON children(household_id, seq);
        CREATE TABLE transactions (
            n bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            household_id uuid NOT NULL,
            id uuid NOT NULL,
            child_id uuid NOT NULL,
            amount_cents bigint NOT NULL,
            note text NOT NULL,
            source text NOT NULL,
            created_at timestamptz NOT NULL,
            recorded_at timestamptz NOT NULL,
            author_account_id uuid NOT NULL,
            reverses_id uuid,
            reversed_by_id uuid,
            -- The id this transaction's reversal will take (NULL for reversals): reserved.
            reversal_id uuid,
            seq bigint NOT NULL,
            PRIMARY KEY (household_id, id),
            FOREIGN KEY (household_id, child_id) REFERENCES children(household_id, id) ON DELETE CASCADE
        );
        CREATE INDEX transactions_child ON transactions(household_id, child_id, n);
        CREATE INDEX transactions_household ON transactions(household_id, n);
        CREATE INDEX transactions_feed ON transactions(household_id, seq);
        CREATE UNIQUE INDEX transactions_reverses ON transactions(household_id, reverses_id) WHERE reverses_id IS NOT NULL;
        CREATE INDEX transactions_reversal_id ON transactions(household_id, reversal_id) WHERE reversal_id IS NOT NULL;
        CREATE INDEX transactions_undoable ON transactions(household_id, child_id, n)
            WHERE reverses_id IS NULL AND reversed_by_id IS NULL;
        CREATE TABLE participants (
            n bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
            household_id uuid NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            account_id uuid NOT NULL REFERENCES accounts(id),
            permission text NOT NULL CHECK (permission IN ('readWrite', 'readOnly')),
            status text NOT NULL CHECK (status IN ('invited', 'accepted', 'declined', 'revoked', 'left')),
            invitation_id uuid NOT NULL UNIQUE,
            invited_at timestamptz NOT NULL,
            updated_at timestamptz NOT NULL,
            accepted_at timestamptz,
            PRIMARY KEY (household_id, account_id)
        );
        CREATE INDEX participants_account ON participants(account_id, status);
        CREATE TABLE subscriptions (
            household_id uuid PRIMARY KEY REFERENCES households(id) ON DELETE CASCADE,
            signed_transaction text NOT NULL,
            product_id text NOT NULL,
            original_transaction_id text NOT NULL,
            expires_at timestamptz,
            environment text NOT NULL,
            verified_at timestamptz NOT NULL,
            granted_by uuid NOT NULL
        );
        CREATE TABLE device_sync (
            token_id uuid NOT NULL REFERENCES tokens(id),
            household_id uuid NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            last_pull_at timestamptz,
            last_push_at timestamptz,
            last_pull_seq bigint NOT NULL DEFAULT 0,
            PRIMARY KEY (token_id, household_id)
        );
        """),
        // App Store purchases as the App Store tells their life (SQLite's version 5): the
        // newest verified event per original transaction (an owner's upload or a Server
        // Notification), ordered by (signed date, event key); households link to a purchase
        // through `subscriptions`. Every verified notification is remembered by its UUID (a
        // string up to 64 bytes, as the App Store sends it), so replays change nothing.
        // Subscriptions stored before become their purchases' first events.
        (2, """
        CREATE TABLE app_store_purchases (
            original_transaction_id text PRIMARY KEY,
            environment text NOT NULL,
            product_id text NOT NULL,
            expires_at timestamptz,
            revoked_at timestamptz,
            grace_until timestamptz,
            billing_retry boolean NOT NULL DEFAULT false,
            auto_renew boolean,
            apple_status integer,
            event_type text,
            event_subtype text,
            event_signed_date timestamptz NOT NULL,
            event_key text NOT NULL,
            source text NOT NULL,
            signed_transaction text NOT NULL,
            signed_renewal_info text,
            updated_at timestamptz NOT NULL
        );
        CREATE INDEX app_store_purchases_updated ON app_store_purchases(updated_at);
        CREATE TABLE app_store_notifications (
            notification_uuid text PRIMARY KEY,
            notification_type text NOT NULL,
            subtype text,
            original_transaction_id text,
            signed_date timestamptz NOT NULL,
            received_at timestamptz NOT NULL,
            outcome text NOT NULL
        );
        CREATE INDEX app_store_notifications_received ON app_store_notifications(received_at);
        CREATE INDEX subscriptions_original_transaction ON subscriptions(original_transaction_id);
        INSERT INTO app_store_purchases (original_transaction_id, environment, product_id, expires_at, event_signed_date,
                                         event_key, source, signed_transaction, updated_at)
            SELECT DISTINCT ON (original_transaction_id) original_transaction_id, environment, product_id, expires_at,
                   'epoch'::timestamptz, '', 'upload', signed_transaction, verified_at
            FROM subscriptions ORDER BY original_transaction_id, verified_at DESC;
        """),
        // A purchase is keyed by (environment, original transaction id) (SQLite's version
        // 10): a Sandbox event must never change a Production purchase. Every row keeps the
        // environment it has; a household whose purchase row holds another environment than
        // its upload (a Sandbox event changed it before) gets its upload back as that
        // purchase's first event.
        (3, """
        ALTER TABLE app_store_purchases DROP CONSTRAINT app_store_purchases_pkey;
        ALTER TABLE app_store_purchases ADD PRIMARY KEY (environment, original_transaction_id);
        INSERT INTO app_store_purchases (original_transaction_id, environment, product_id, expires_at, event_signed_date,
                                         event_key, source, signed_transaction, updated_at)
            SELECT DISTINCT ON (environment, original_transaction_id) original_transaction_id, environment, product_id,
                   expires_at, 'epoch'::timestamptz, '', 'upload', signed_transaction, verified_at
            FROM subscriptions ORDER BY environment, original_transaction_id, verified_at DESC
            ON CONFLICT DO NOTHING;
        """),
        // Blocks (SQLite's version 11): an account refuses invitations from another,
        // listed newest first; live tokens indexed for the per-account cap and their list.
        (4, """
        CREATE TABLE blocks (
            account_id uuid NOT NULL REFERENCES accounts(id),
            blocked_account_id uuid NOT NULL REFERENCES accounts(id),
            created_at timestamptz NOT NULL,
            PRIMARY KEY (account_id, blocked_account_id)
        );
        CREATE INDEX blocks_list ON blocks(account_id, created_at, blocked_account_id);
        CREATE INDEX tokens_live ON tokens(account_id, created_at, id) WHERE revoked_at IS NULL;
        """),
        // Identities (SQLite's version 12): linked OpenID Connect identities, nonces of
        // accepted ID tokens shared by every process, Apple refresh tokens kept (sealed) for
        // revocation, outliving their account until Apple has answered.
        (5, """
        CREATE TABLE identities (
            id uuid PRIMARY KEY,
            account_id uuid NOT NULL REFERENCES accounts(id) ON DELETE CASCADE,
            provider text NOT NULL,
            issuer text NOT NULL,
            subject text NOT NULL,
            linked_at timestamptz NOT NULL,
            UNIQUE (issuer, subject)
        );
        CREATE INDEX identities_account ON identities(account_id, linked_at, id);
        CREATE TABLE identity_nonces (
            nonce_hash text PRIMARY KEY,
            expires_at timestamptz NOT NULL
        );
        CREATE INDEX identity_nonces_expiry ON identity_nonces(expires_at);
        CREATE TABLE apple_tokens (
            id uuid PRIMARY KEY,
            account_id uuid NOT NULL,
            identity_id uuid,
            client_id text NOT NULL,
            sealed bytea NOT NULL,
            key_id text NOT NULL,
            created_at timestamptz NOT NULL,
            revoke_after timestamptz,
            attempts integer NOT NULL DEFAULT 0,
            last_error text
        );
        CREATE INDEX apple_tokens_account ON apple_tokens(account_id);
        CREATE INDEX apple_tokens_identity ON apple_tokens(identity_id);
        CREATE INDEX apple_tokens_due ON apple_tokens(revoke_after) WHERE revoke_after IS NOT NULL;
        """),
        // Link codes, recovery codes, attempt counters, deleted accounts and retired
        // handles (SQLite's version 13). Rows every process shares: a code issued by one
        // process redeems at another, and a limit counts every process's attempts.
        (6, """
        CREATE TABLE deleted_accounts (
            account_id uuid PRIMARY KEY REFERENCES accounts(id),
            deleted_at timestamptz NOT NULL
        );
        CREATE TABLE link_codes (
            hash bytea PRIMARY KEY,
            bucket text NOT NULL,
            account_id uuid NOT NULL REFERENCES accounts(id),
            created_at timestamptz NOT NULL,
            expires_at timestamptz NOT NULL,
            failures integer NOT NULL DEFAULT 0
        );
        CREATE INDEX link_codes_bucket ON link_codes(bucket);
        CREATE INDEX link_codes_account ON link_codes(account_id, created_at);
        CREATE INDEX link_codes_expiry ON link_codes(expires_at);
        CREATE TABLE recovery_codes (
            account_id uuid NOT NULL REFERENCES accounts(id),
            hash bytea NOT NULL,
            created_at timestamptz NOT NULL,
            used_at timestamptz,
            PRIMARY KEY (account_id, hash)
        );
        CREATE TABLE attempt_counters (
            scope text NOT NULL,
            subject text NOT NULL,
            window_start timestamptz NOT NULL,
            attempts bigint NOT NULL,
            PRIMARY KEY (scope, subject)
        );
        CREATE INDEX attempt_counters_window ON attempt_counters(scope, window_start);
        CREATE TABLE retired_handles (
            handle text PRIMARY KEY,
            account_id uuid NOT NULL,
            reserved_until timestamptz NOT NULL
        );
        """),
        // Push (SQLite's version 14): registrations with a Matrix push gateway and the wake
        // outbox, one row per device and household (its quiet time in the row: a change and an
        // answer meeting on it are ordered by the row's lock), written with the change that wakes. A
        // process takes due rows with FOR UPDATE SKIP LOCKED, moving their due time to its
        // lease's end, so of several processes one sends each wake.
        (7, """
        CREATE TABLE push_registrations (
            token_id uuid PRIMARY KEY REFERENCES tokens(id),
            account_id uuid NOT NULL,
            app_id text NOT NULL,
            push_key text NOT NULL,
            gateway text NOT NULL,
            registered_at timestamptz NOT NULL
        );
        CREATE INDEX push_registrations_account ON push_registrations(account_id);
        CREATE UNIQUE INDEX push_registrations_key ON push_registrations(account_id, app_id, push_key);
        CREATE TABLE push_wakes (
            token_id uuid NOT NULL REFERENCES push_registrations(token_id) ON DELETE CASCADE,
            household_id uuid NOT NULL,
            seq bigint NOT NULL,
            sent_seq bigint NOT NULL DEFAULT 0,
            due_at timestamptz,
            quiet_until timestamptz NOT NULL DEFAULT 'epoch',
            attempts integer NOT NULL DEFAULT 0,
            queued_at timestamptz NOT NULL,
            PRIMARY KEY (token_id, household_id)
        );
        CREATE INDEX push_wakes_due ON push_wakes(due_at) WHERE due_at IS NOT NULL;
        """),
        // Allowance and interest schedules (SQLite's version 15, `ScheduleRecord`): the columns the rules query,
        // the rest one JSON document. A deleted schedule stays as a tombstone for the change
        // feed. `due_at` is the instant its next date falls due (NULL: nothing to pay) — the
        // payment job's index.
        (8, """
        CREATE TABLE schedules (
            household_id uuid NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            id uuid NOT NULL,
            child_id uuid NOT NULL,
            seq bigint NOT NULL,
            deleted boolean NOT NULL DEFAULT false,
            due_at timestamptz,
            created_at timestamptz NOT NULL,
            doc text NOT NULL,
            PRIMARY KEY (household_id, id)
        );
        CREATE INDEX schedules_child ON schedules(household_id, child_id, created_at, id);
        CREATE INDEX schedules_feed ON schedules(household_id, seq);
        CREATE INDEX schedules_due ON schedules(due_at) WHERE due_at IS NOT NULL;
        """),
        // The database's incarnation (SQLite's version 16): replaced by `rewound` after a
        // pg_restore, a point-in-time recovery or a failover to an asynchronous standby; and
        // the records an owner restored in another member's name.
        (9, """
        CREATE TABLE database_incarnation (
            id integer PRIMARY KEY CHECK (id = 1),
            incarnation bigint NOT NULL,
            since timestamptz NOT NULL,
            reason text NOT NULL
        );
        INSERT INTO database_incarnation (id, incarnation, since, reason)
            VALUES (1, (random() * 4611686018427387903)::bigint, now(), 'created');
        CREATE TABLE restored_records (
            household_id uuid NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            kind text NOT NULL,
            id uuid NOT NULL,
            restored_by uuid NOT NULL,
            restored_at timestamptz NOT NULL,
            PRIMARY KEY (household_id, kind, id)
        );
        """),
        // Pots (SQLite's version 17): a child's pots beside its default pot, which has no
        // row until it is edited; a deleted pot stays as a tombstone for the change feed. A
        // transaction names its pot in `pot_id` (NULL: the child's default pot, as every
        // earlier row is). A pot's balance is the sum of its transactions.
        (10, """
        ALTER TABLE transactions ADD COLUMN pot_id uuid;
        CREATE TABLE pots (
            household_id uuid NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            id uuid NOT NULL,
            child_id uuid NOT NULL,
            name text NOT NULL,
            target_cents bigint,
            target_date text,
            archived boolean NOT NULL DEFAULT false,
            deleted boolean NOT NULL DEFAULT false,
            created_at timestamptz NOT NULL,
            modified_at timestamptz NOT NULL,
            modified_by uuid NOT NULL,
            change_tag text NOT NULL,
            seq bigint NOT NULL,
            PRIMARY KEY (household_id, id)
        );
        CREATE INDEX pots_child ON pots(household_id, child_id, created_at, id);
        CREATE INDEX pots_feed ON pots(household_id, seq);
        """),
        // Children's devices and requests (SQLite's version 18):
        // a link code's child, child tokens (no account; they live with the
        // household), requests (columns the rules query, the rest one document).
        (11, """
        ALTER TABLE link_codes ADD COLUMN household_id uuid;
        ALTER TABLE link_codes ADD COLUMN child_id uuid;
        ALTER TABLE link_codes ADD COLUMN device_name text;
        CREATE TABLE child_tokens (
            id uuid PRIMARY KEY,
            household_id uuid NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            child_id uuid NOT NULL,
            hash bytea NOT NULL UNIQUE,
            device_name text NOT NULL,
            paired_by uuid NOT NULL,
            created_at timestamptz NOT NULL,
            revoked_at timestamptz
        );
        CREATE INDEX child_tokens_child ON child_tokens(household_id, child_id, created_at, id) WHERE revoked_at IS NULL;
        CREATE TABLE requests (
            household_id uuid NOT NULL REFERENCES households(id) ON DELETE CASCADE,
            id uuid NOT NULL,
            child_id uuid NOT NULL,
            seq bigint NOT NULL,
            status text NOT NULL,
            payment_id uuid NOT NULL,
            created_at timestamptz NOT NULL,
            doc text NOT NULL,
            PRIMARY KEY (household_id, id)
        );
        CREATE INDEX requests_child ON requests(household_id, child_id, created_at, id);
        CREATE INDEX requests_feed ON requests(household_id, seq);
        CREATE INDEX requests_payment ON requests(household_id, payment_id);
        """),
        // A child's device registers for wakes too (SQLite's version 19): a registration
        // refers to `tokens` no more (a child token lives in `child_tokens`); `account_id`
        // is NULL for a child token's row, which names its household and child instead (it
        // goes with its household).
        (12, """
        ALTER TABLE push_registrations DROP CONSTRAINT push_registrations_token_id_fkey;
        ALTER TABLE push_registrations ALTER COLUMN account_id DROP NOT NULL;
        ALTER TABLE push_registrations ADD COLUMN household_id uuid REFERENCES households(id) ON DELETE CASCADE;
        ALTER TABLE push_registrations ADD COLUMN child_id uuid;
        ALTER TABLE push_registrations ADD CONSTRAINT push_registrations_owner
            CHECK ((account_id IS NULL) = (household_id IS NOT NULL AND child_id IS NOT NULL));
        CREATE INDEX push_registrations_household ON push_registrations(household_id) WHERE household_id IS NOT NULL;
        """),
        // A transaction's `n` is an identity column: unique by construction, and read only
        // after a household (and child) in `transactions_household`/`transactions_child`.
        // Its own unique index was one more index entry per row written, about a tenth of
        // PostgreSQL's CPU for the schedule job's payments (issue 45).
        (13, """
        ALTER TABLE transactions DROP CONSTRAINT transactions_n_key;
        """),
        // A transaction's child is checked by the rules (a write names a child of its
        // household, read under the household's lock) and children are never deleted but
        // with their household, whose deletion deletes its transactions itself
        // (`deleteHousehold`). The foreign key checked every row written, about a tenth of
        // PostgreSQL's CPU for the schedule job's payments (issue 45).
        (14, """
        ALTER TABLE transactions DROP CONSTRAINT transactions_household_id_child_id_fkey;
        """),
        // Fewer index entries per payment of the schedule job (issue 45). A payment row
        // entered six indexes and its schedule's update (never HOT: its `seq` and `due_at`
        // are indexed) four. The newest undoable transaction of a child is found by
        // `transactions_child` read backwards (the rows skipped are the child's newest
        // reversals and the transactions they reversed); a child's schedules are read
        // through the primary key's household prefix and sorted (a household holds a
        // few dozen schedules). Schedules' new pages keep 30 % free, so a schedule's new
        // version stays on its page (no search for space, one page in the WAL record).
        (15, """
        DROP INDEX transactions_undoable;
        DROP INDEX schedules_child;
        ALTER TABLE schedules SET (fillfactor = 70);
        """),
    ]

    /// Applies the migrations on one connection; returns the versions it applied.
    static func migrate(_ db: PGConnection) throws -> [Int] {
        try PGMigrator.migrate(db, migrations)
    }
}
#endif
