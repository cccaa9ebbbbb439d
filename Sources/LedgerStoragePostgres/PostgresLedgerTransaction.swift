#if Postgres
import LedgerCore
import LedgerModel
import PostgresKit

/// The primitives of `LedgerWriting` on one PostgreSQL connection, inside one transaction
/// (`PostgresLedgerStorage` opens and ends it).
///
/// In a write transaction the first statement about a household locks its row
/// (`FOR NO KEY UPDATE`), so every write of one household runs after the previous one
/// committed, the change sequence advances in commit order, and what a write reads of the
/// household is current. In a read (REPEATABLE READ, read only) nothing is locked and every
/// statement sees the same snapshot.
final class PostgresLedgerTransaction: LedgerWriting {
    let db: PGConnection
    let writing: Bool
    /// Households locked by this transaction, with their change sequence value.
    private var locked: [String: Int64?] = [:]
    /// Access records read in this write, by household and account: while the household's
    /// row is locked nobody else changes its owner or participants, so writes of a group
    /// commit's batch check access once per caller, not once each.
    private var accessRead: [String: AccessRecord?] = [:]
    /// What the running write changed (taken after each write: `takeEffects`).
    private var effects = StorageCommit()

    init(_ db: PGConnection, writing: Bool) {
        self.db = db
        self.writing = writing
        // Rows held back (`heldTransactions`, `heldSchedules`) go before any statement
        // queued after them.
        db.willQueue = writing ? { [weak self] in self?.sendHeld() } : nil
    }

    /// Locks the household's row first, once per transaction (writes only), in a
    /// statement of its own: a statement that waited for a row lock reads the other tables
    /// as they were before the wait (READ COMMITTED re-reads only the locked row), so what
    /// the lock's holder committed is read by the statements after this one.
    func lock(_ household: String) throws {
        guard writing, locked[household] == nil else { return }
        let row = try db.queryOne("SELECT seq FROM households WHERE id = $1 FOR NO KEY UPDATE", [.uuid(household)])
        locked[household] = .some(row?.int(0))
    }

    /// Locks the rows of `households` not locked yet, in id order, in one statement (a
    /// group commit's batch, before its first write: batches never wait for each other in
    /// a cycle).
    func lock(households: [String]) throws {
        let missing = households.filter { locked[$0] == nil }.sorted()
        guard writing, !missing.isEmpty else { return }
        // Locked in id order, then updated (to the same seq) by the transaction itself: the
        // writes run in savepoints, and a row locked by the transaction but updated by one
        // of its subtransactions costs PostgreSQL a multixact each time, which made every
        // batch slower than the last on a busy household.
        let rows = try db.query(Self.lockSQL, [.uuidArray(missing)]).rows
        for h in missing { locked[h] = .some(nil) }
        for r in rows { locked[r.uuid(0)] = .some(r.int(1)) }
    }

    func lockHouseholds(_ ids: [String]) throws { try lock(households: ids) }

    /// Locks the rows of `households` (as `lock(households:)`) and, in the same round trip,
    /// reads what `lookaheads` name (each with its household): the caller's access, whether
    /// the transaction id is free (no transaction holds it as its id or reserved reversal
    /// id, no request as its payment id) and the child's balance. Those answer the writes'
    /// first lookups (`accessAndTransaction`) without a statement each: read after the
    /// locks, they stay current while the rows are locked, except for what this transaction
    /// writes, which `knownFree`, `unsentBalance` and `forgetLookahead(household:)` follow.
    func lock(households: [String], reading lookaheads: [(household: String, lookahead: WriteLookahead)]) throws {
        let missing = households.filter { locked[$0] == nil }.sorted()
        guard writing, !missing.isEmpty else { return }
        guard !lookaheads.isEmpty else { return try lock(households: missing) }
        let results = try db.query(all: [
            (Self.lockSQL, [.uuidArray(missing)]),
            (Self.lookaheadSQL, [.uuidArray(lookaheads.map(\.household)),
                                 .uuidArray(lookaheads.map(\.lookahead.account)),
                                 .uuidArray(lookaheads.map(\.lookahead.transactionId)),
                                 .uuidArray(lookaheads.map(\.lookahead.child))]),
        ])
        for h in missing { locked[h] = .some(nil) }
        for r in results[0].rows { locked[r.uuid(0)] = .some(r.int(1)) }
        // A household that does not exist has no row: no access to it.
        for (h, l) in lookaheads { accessRead[h + " " + l.account] = .some(nil) }
        for r in results[1].rows {
            let (h, l) = lookaheads[Int(r.int(6)) - 1]
            accessRead[h + " " + l.account] = .some(AccessRecord(row: r))
            readAhead[h + " " + l.child] = .some(r.isNull(4) ? nil : r.int(4))
            if !r.bool(5) { knownFree.insert(h + " " + l.transactionId) }
        }
    }

    /// Balances read ahead (`lock(households:reading:)`), by household + " " + child; nil:
    /// no such child. What this transaction writes since is in `unsentBalance`, or here
    /// once sent.
    private var readAhead: [String: Int64?] = [:]

    /// Forgets what was read ahead about `household` but its access records, before a
    /// write of it that may change rows the read-ahead values do not follow (a child added).
    func forgetLookahead(household: String) {
        guard !readAhead.isEmpty else { return }
        let prefix = household + " "
        readAhead = readAhead.filter { !$0.key.hasPrefix(prefix) }
    }

    private static let lockSQL = """
        UPDATE households h SET seq = h.seq
        FROM (SELECT id FROM households WHERE id = ANY($1::uuid[]) ORDER BY id FOR NO KEY UPDATE) l
        WHERE h.id = l.id RETURNING h.id, h.seq
        """
    /// Per write read ahead (`$1`…`$4`: households, accounts, transaction ids, children, in
    /// step): `accessSQL`'s columns, the child's balance, whether the id is taken, the
    /// write's position (from 1).
    private static let lookaheadSQL = """
        SELECT h.owner_account_id, p.status, p.permission, p.accepted_at IS NOT NULL,
               (SELECT c.balance_cents FROM children c WHERE c.household_id = h.id AND c.id = w.child),
               EXISTS (SELECT 1 FROM transactions t WHERE t.household_id = h.id AND t.id = w.tx)
                 OR EXISTS (SELECT 1 FROM transactions r WHERE r.household_id = h.id AND r.reversal_id = w.tx)
                 OR EXISTS (SELECT 1 FROM requests q WHERE q.household_id = h.id AND q.payment_id = w.tx),
               w.o
        FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[]) WITH ORDINALITY
             AS w(household, account, tx, child, o)
        JOIN households h ON h.id = w.household
        LEFT JOIN participants p ON p.household_id = h.id AND p.account_id = w.account
        WHERE h.id = ANY($1::uuid[])
        """

    /// Change sequences and balances written by this transaction but not yet sent: each
    /// row is written once, before COMMIT (`sendDeferred`) or before a statement that reads
    /// it, instead of once per write — a group commit's batch of 32 writes to one child
    /// would otherwise leave 64 row versions behind, more than a page holds, so updates
    /// stop being HOT and the tables' indexes grow with every batch.
    private var unsentSeq: Set<String> = []
    private var unsentBalance: [String: (household: String, child: String, cents: Int64)] = [:]

    /// Transaction ids that `expectNewTransactions` found free (by household + " " + id):
    /// no row of the household holds them as its id or its reserved reversal id. While the
    /// household's row is locked no other transaction adds to its ledger, so a lookup of
    /// such an id needs no statement; an id this transaction inserts (or reserves) leaves.
    var knownFree: Set<String> = []

    /// New transactions and schedule updates held back, to go to the database as one
    /// statement per household and table when there are several (the job's payments of a
    /// household: one INSERT and one UPDATE instead of one of each per schedule). They are
    /// queued before the next statement (`PGConnection.willQueue`), so statements keep the
    /// order the write asked for them in; a savepoint rolled back drops them (`dropHeld`).
    private var heldTransactions: [(t: LedgerTransaction, reserved: String?, seq: Int64)] = []
    private var heldSchedules: [(s: ScheduleRecord, seq: Int64?)] = []

    /// What this transaction knows of its locks, sequences and unsent rows, to return to
    /// when a savepoint is rolled back (locks taken after it are released with it).
    struct SavepointState {
        fileprivate let locked: [String: Int64?]
        fileprivate let unsentSeq: Set<String>
        fileprivate let unsentBalance: [String: (household: String, child: String, cents: Int64)]
        fileprivate let knownFree: Set<String>
        fileprivate let readAhead: [String: Int64?]
    }

    var savepointState: SavepointState {
        get {
            SavepointState(locked: locked, unsentSeq: unsentSeq, unsentBalance: unsentBalance, knownFree: knownFree,
                           readAhead: readAhead)
        }
        set {
            locked = newValue.locked
            unsentSeq = newValue.unsentSeq
            unsentBalance = newValue.unsentBalance
            // What was found free before the savepoint, under locks taken before it.
            knownFree = newValue.knownFree
            readAhead = newValue.readAhead
            accessRead.removeAll()
        }
    }

    /// Drops the rows held back (the write that made them is being rolled back).
    func dropHeld() {
        heldTransactions.removeAll()
        heldSchedules.removeAll()
    }

    func attributeChanges(to token: String) { effects.author = token }

    /// Reports a token revoked by this write (the read caches forget, long-polls end).
    func noteRevoked(token id: String) { effects.revokedTokens.insert(id) }

    /// What the running write changed so far.
    var currentEffects: StorageCommit { effects }

    /// What was changed since the last call (a write's effects, once it ran).
    func takeEffects() -> StorageCommit {
        defer { effects = StorageCommit() }
        return effects
    }

    /// Queues the rows written but not sent yet (they go with the next statement, or the COMMIT).
    func sendDeferred() {
        sendHeld()
        // One statement per table, however many households and children (a batch of writes
        // to many households: two statements, not two per write).
        var seqs: [(household: String, seq: Int64)] = []
        for h in unsentSeq.sorted() {
            if case .some(.some(let seq)) = locked[h] { seqs.append((h, seq)) }
        }
        if seqs.count == 1, let (h, seq) = seqs.first {
            db.later("UPDATE households SET seq = $2 WHERE id = $1", [.uuid(h), .int(seq)])
        } else if !seqs.isEmpty {
            db.later(Self.updateSeqsSQL, [.uuidArray(seqs.map(\.household)), .intArray(seqs.map(\.seq))])
        }
        let balances = unsentBalance.keys.sorted().map { unsentBalance[$0]! }
        for key in unsentBalance.keys where readAhead[key] != nil { readAhead[key] = .some(unsentBalance[key]!.cents) }
        if balances.count == 1, let b = balances.first {
            db.later("UPDATE children SET balance_cents = $3 WHERE household_id = $1 AND id = $2",
                     [.uuid(b.household), .uuid(b.child), .int(b.cents)])
        } else if !balances.isEmpty {
            db.later(Self.updateBalancesSQL, [.uuidArray(balances.map(\.household)), .uuidArray(balances.map(\.child)),
                                              .intArray(balances.map(\.cents))])
        }
        unsentSeq.removeAll()
        unsentBalance.removeAll()
    }

    /// The sequences of several households (`$1`, `$2` in step).
    private static let updateSeqsSQL = """
        UPDATE households h SET seq = v.seq
        FROM unnest($1::uuid[], $2::bigint[]) AS v(id, seq)
        WHERE h.id = ANY($1::uuid[]) AND h.id = v.id
        """
    /// The balances of several children (`$1`…`$3`: households, children, cents, in step).
    private static let updateBalancesSQL = """
        UPDATE children c SET balance_cents = v.cents
        FROM unnest($1::uuid[], $2::uuid[], $3::bigint[]) AS v(household_id, id, cents)
        WHERE c.household_id = ANY($1::uuid[]) AND c.household_id = v.household_id AND c.id = v.id
        """

    /// `stored`, or the balance written since and not sent yet.
    private func current(balance stored: Int64?, household: String, child: String) -> Int64? {
        guard stored != nil, let unsent = unsentBalance[household + " " + child] else { return stored }
        return unsent.cents
    }

    // MARK: row decoding

    private static let childColumns =
        "id, household_id, name, sort_order, archived, created_at, modified_at, modified_by, change_tag, balance_cents"
    private static let txColumns =
        "id, household_id, child_id, amount_cents, note, source, created_at, recorded_at, author_account_id, reverses_id, reversed_by_id, "
        + "pot_id"
    private static let householdColumns =
        "id, name, currency, owner_account_id, created_at, modified_at, change_tag, shared"
    private static let participantColumns =
        "p.household_id, p.account_id, a.handle, a.display_name, p.permission, p.status, p.invitation_id, p.invited_at"

    // Statements built once, not per call.
    private static let accessSQL = """
        SELECT h.owner_account_id, p.status, p.permission, p.accepted_at IS NOT NULL
        FROM households h LEFT JOIN participants p ON p.household_id = h.id AND p.account_id = $2
        WHERE h.id = $1
        """
    /// `txColumns` of the table named `t`.
    private static let tTxColumns = txColumns.split(separator: ",").map { "t." + $0.drop { $0 == " " } }.joined(separator: ", ")
    /// `accessSQL`'s columns, the child's balance, then the transaction's (`txColumns`).
    private static let accessAndTransactionSQL = """
        SELECT h.owner_account_id, p.status, p.permission, p.accepted_at IS NOT NULL,
               (SELECT balance_cents FROM children WHERE household_id = $1 AND id = $4), \(tTxColumns)
        FROM households h LEFT JOIN participants p ON p.household_id = h.id AND p.account_id = $2
        LEFT JOIN transactions t ON t.household_id = h.id AND t.id = $3
        WHERE h.id = $1
        """

    private static let transactionAndBalanceSQL = """
        SELECT (SELECT balance_cents FROM children WHERE household_id = $1 AND id = $3), \(tTxColumns)
        FROM (SELECT 1) one LEFT JOIN transactions t ON t.household_id = $1 AND t.id = $2
        """
    private static let householdSQL = "SELECT \(householdColumns) FROM households WHERE id = $1"
    private static let childSQL = "SELECT \(childColumns) FROM children WHERE household_id = $1 AND id = $2"
    private static let balanceSQL = "SELECT balance_cents FROM children WHERE household_id = $1 AND id = $2"
    private static let childrenSQL = """
        SELECT \(childColumns) FROM children WHERE household_id = $1 AND (NOT archived OR $2) ORDER BY sort_order, created_at, id
        """
    private static let transactionSQL = "SELECT \(txColumns) FROM transactions WHERE household_id = $1 AND id = $2"
    private static let reservingSQL = "SELECT \(txColumns) FROM transactions WHERE household_id = $1 AND reversal_id = $2"
    private static let childTransactionsSQL = """
        SELECT \(txColumns), n FROM transactions WHERE household_id = $1 AND child_id = $2 AND n < $3 ORDER BY n DESC LIMIT $4
        """
    private static let householdTransactionsSQL =
        "SELECT \(txColumns), n FROM transactions WHERE household_id = $1 AND n < $2 ORDER BY n DESC LIMIT $3"
    private static let newestUndoableSQL = """
        SELECT \(txColumns) FROM transactions
        WHERE household_id = $1 AND child_id = $2 AND reverses_id IS NULL AND reversed_by_id IS NULL ORDER BY n DESC LIMIT 1
        """

    // MARK: accounts and tokens

    func caller(tokenHash: [UInt8]) throws -> Caller? {
        try db.queryOne("SELECT id, account_id, hash FROM tokens WHERE hash = $1 AND revoked_at IS NULL", [.bytes(tokenHash)])
            .flatMap { Caller(row: $0, hash: tokenHash) }
    }

    func account(id: String) throws -> AccountRecord? {
        try db.queryOne("SELECT id, handle, display_name, created_at FROM accounts WHERE id = $1", [.uuid(id)]).map { AccountRecord(row: $0) }
    }

    func accountId(handle: String) throws -> String? {
        try db.queryOne("SELECT id FROM accounts WHERE handle = $1", [.text(handle)])?.uuid(0)
    }

    func token(id: String) throws -> TokenRecord? {
        try db.queryOne("SELECT id, account_id, device_name, created_at, last_used_at FROM tokens WHERE id = $1",
                        [.uuid(id)]).map { TokenRecord(row: $0) }
    }

    func activeTokens(account: String, after: TimeAndIdPosition?, limit: Int) throws -> KeyedPage<TokenRecord, TimeAndIdPosition> {
        let rows = try db.query("""
            SELECT id, account_id, device_name, created_at, last_used_at FROM tokens
            WHERE account_id = $1 AND revoked_at IS NULL AND (NOT $2 OR (created_at, id) > ($3, $4))
            ORDER BY created_at, id LIMIT $5
            """, [.uuid(account), .bool(after != nil), .timestamp(ms: after?.time ?? 0), .uuid(after?.id ?? Self.noId),
                  .int(Int64(limit) + 1)]).rows
        return KeyedPage(rows: rows, limit: limit, item: { TokenRecord(row: $0) }) { _, t in TimeAndIdPosition(time: t.createdAt, id: t.id) }
    }

    /// A placeholder id for a position that is absent (the statement does not read it then).
    static let noId = "00000000-0000-0000-0000-000000000000"

    func activeTokenCount(account: String) throws -> Int {
        Int(try db.queryOne("SELECT count(*) FROM tokens WHERE account_id = $1 AND revoked_at IS NULL", [.uuid(account)])?.int(0) ?? 0)
    }

    /// Each account's row, in id order, one statement each (the order every such write uses).
    func lockAccounts(_ ids: [String]) throws {
        guard writing else { return }
        for account in Set(ids).sorted() {
            try db.query("SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE", [.uuid(account)])
        }
    }

    func isActive(token: String) throws -> Bool {
        try db.queryOne("""
            SELECT 1 FROM tokens WHERE id = $1 AND revoked_at IS NULL
            UNION ALL SELECT 1 FROM child_tokens WHERE id = $1 AND revoked_at IS NULL
            """, [.uuid(token)]) != nil
    }

    func insertAccount(_ a: AccountRecord) throws {
        try db.query("INSERT INTO accounts (id, handle, display_name, created_at) VALUES ($1, $2, $3, $4)",
                     [.uuid(a.id), .text(a.handle), .text(a.displayName), .timestamp(ms: a.createdAt)])
    }

    func insertToken(_ t: TokenRecord, hash: [UInt8]) throws {
        try db.query("INSERT INTO tokens (id, account_id, hash, device_name, created_at) VALUES ($1, $2, $3, $4, $5)",
                     [.uuid(t.id), .uuid(t.accountId), .bytes(hash), .text(t.deviceName), .timestamp(ms: t.createdAt)])
    }

    func revokeToken(id: String, account: String, at: Int64) throws -> Bool {
        let n = try db.query("UPDATE tokens SET revoked_at = $3 WHERE id = $1 AND account_id = $2 AND revoked_at IS NULL",
                             [.uuid(id), .uuid(account), .timestamp(ms: at)]).affectedRows
        guard n > 0 else { return false }
        effects.revokedTokens.insert(id)
        // A signed-out device is woken no more.
        try db.query("DELETE FROM push_registrations WHERE token_id = $1", [.uuid(id)])
        return true
    }

    // MARK: households

    func household(id: String) throws -> HouseholdRecord? {
        sendDeferred()
        try lock(id)
        return try db.queryOne(Self.householdSQL, [.uuid(id)]).map { HouseholdRecord(row: $0) }
    }

    func accessRecord(household: String, account: String) throws -> AccessRecord? {
        let key = household + " " + account
        if writing, let known = accessRead[key] { return known }
        let record = try readAccessRecord(household: household, account: account)
        if writing { accessRead[key] = .some(record) }
        return record
    }

    func accessAndTransaction(household: String, account: String, id: String, reversalId: String?,
                              child: String) throws -> (AccessRecord?, LedgerTransaction?, Int64?) {
        let key = household + " " + account
        if writing, let known = accessRead[key] {
            guard let known else { return (nil, nil, nil) }
            let (t, balance) = try transactionAndBalance(household: household, id: id, reversalId: reversalId, child: child)
            return (known, t, balance)
        }
        try lock(household)
        guard let r = try db.queryOne(Self.accessAndTransactionSQL, [.uuid(household), .uuid(account), .uuid(id), .uuid(child)]) else {
            if writing { accessRead[key] = .some(nil) }
            return (nil, nil, nil)
        }
        let access = AccessRecord(row: r)
        if writing { accessRead[key] = .some(access) }
        return (access, r.isNull(5) ? nil : LedgerTransaction(row: r, at: 5),
                current(balance: r.isNull(4) ? nil : r.int(4), household: household, child: child))
    }

    private func readAccessRecord(household: String, account: String) throws -> AccessRecord? {
        try lock(household)
        return try db.queryOne(Self.accessSQL, [.uuid(household), .uuid(account)]).map { AccessRecord(row: $0) }
    }

    func households(account: String, after: Int64?, limit: Int) throws -> KeyedPage<HouseholdListing, Int64> {
        sendDeferred()
        let rows = try db.query("""
            /* global: households of an account */
            SELECT h.id, h.name, h.currency, h.owner_account_id, h.created_at, h.modified_at,
                   h.change_tag, h.shared, p.permission, h.n
            FROM households h LEFT JOIN participants p ON p.household_id = h.id AND p.account_id = $1
            WHERE (h.owner_account_id = $1 OR p.status = 'accepted') AND h.n > $2
            ORDER BY h.n LIMIT $3
            """, [.uuid(account), .int(after ?? 0), .int(Int64(limit) + 1)]).rows
        return KeyedPage(rows: rows, limit: limit, item: { HouseholdListing(row: $0, account: account) }) { r, _ in r.int(9) }
    }

    func householdCount(owner: String) throws -> Int {
        // In a write, the owner's account row is locked first: two processes creating
        // households for one account count one after the other, so the quota holds.
        if writing { try db.query("SELECT 1 FROM accounts WHERE id = $1 FOR NO KEY UPDATE", [.uuid(owner)]) }
        return Int(try db.queryOne("/* global: households of an account */ SELECT count(*) FROM households WHERE owner_account_id = $1",
                                   [.uuid(owner)])?.int(0) ?? 0)
    }

    func nextSeq(household: String) throws -> Int64 {
        try lock(household)
        guard case .some(.some(let current)) = locked[household] else { throw LedgerStorageError.householdNotFound }
        let next = current + 1
        unsentSeq.insert(household)
        locked[household] = .some(next)
        effects.touched.insert(household)
        return next
    }

    func insertHousehold(_ h: HouseholdRecord, incarnation: Int64) throws {
        accessRead.removeAll()
        try lock(h.id)
        try db.query("""
            INSERT INTO households (id, name, currency, owner_account_id, created_at, modified_at, change_tag, incarnation,
                                    seq, household_seq, shared)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 1, 1, $9)
            """, [.uuid(h.id), .text(h.name), .text(h.currency), .uuid(h.ownerAccountId), .timestamp(ms: h.createdAt),
                  .timestamp(ms: h.modifiedAt), .text(h.changeTag), .int(incarnation), .bool(h.shared)])
        locked[h.id] = .some(1)
    }

    func updateHousehold(id: String, name: String, currency: String, shared: Bool, modifiedAt: Int64, seq: Int64) throws {
        try lock(id)
        db.later("""
            UPDATE households SET name = $2, currency = $3, shared = $4, modified_at = $5, change_tag = $6, household_seq = $7
            WHERE id = $1
            """, [.uuid(id), .text(name), .text(currency), .bool(shared), .timestamp(ms: modifiedAt),
                  .text(ChangeTag.of(seq)), .int(seq)])
    }

    func deleteHousehold(id: String) throws {
        sendDeferred()
        accessRead.removeAll()
        try lock(id)
        // Its children's devices end with it (401 from now on, long-polls ended).
        for row in try db.query("DELETE FROM child_tokens WHERE household_id = $1 RETURNING id", [.uuid(id)]).rows {
            effects.revokedTokens.insert(row.uuid(0))
        }
        // Its transactions refer to it by no foreign key (migration 14): deleted here.
        try db.query("DELETE FROM transactions WHERE household_id = $1", [.uuid(id)])
        try db.query("DELETE FROM households WHERE id = $1", [.uuid(id)])
        effects.touched.insert(id)
    }

    // MARK: children and transactions

    func child(household: String, id: String) throws -> Child? {
        sendDeferred()
        try lock(household)
        return try db.queryOne(Self.childSQL, [.uuid(household), .uuid(id)]).map { Child(row: $0) }
    }

    func balance(household: String, child: String) throws -> Int64? {
        try lock(household)
        // Written by this transaction, under the household's lock: nothing newer to read.
        if let unsent = unsentBalance[household + " " + child] { return unsent.cents }
        if let ahead = readAhead[household + " " + child] { return ahead }
        return current(balance: try db.queryOne(Self.balanceSQL, [.uuid(household), .uuid(child)])?.int(0),
                       household: household, child: child)
    }

    func children(household: String, includeArchived: Bool) throws -> [Child] {
        sendDeferred()
        try lock(household)
        return try db.query(Self.childrenSQL, [.uuid(household), .bool(includeArchived)]).rows.map { Child(row: $0) }
    }

    func transaction(household: String, id: String, reversalId: String?) throws -> LedgerTransaction? {
        try lock(household)
        if knownFree.contains(household + " " + id) { return nil }
        return try db.queryOne(Self.transactionSQL, [.uuid(household), .uuid(id)]).map { LedgerTransaction(row: $0) }
    }

    func transactionAndBalance(household: String, id: String, reversalId: String?,
                               child: String) throws -> (LedgerTransaction?, Int64?) {
        try lock(household)
        if knownFree.contains(household + " " + id) { return (nil, try balance(household: household, child: child)) }
        guard let r = try db.queryOne(Self.transactionAndBalanceSQL, [.uuid(household), .uuid(id), .uuid(child)]) else {
            return (nil, nil)
        }
        return (r.isNull(1) ? nil : LedgerTransaction(row: r, at: 1),
                current(balance: r.isNull(0) ? nil : r.int(0), household: household, child: child))
    }

    func childCount(household: String) throws -> Int {
        try lock(household)
        return Int(try db.queryOne("SELECT count(*) FROM children WHERE household_id = $1", [.uuid(household)])?.int(0) ?? 0)
    }

    func transaction(household: String, reservingReversalId id: String) throws -> LedgerTransaction? {
        try lock(household)
        if knownFree.contains(household + " " + id) { return nil }
        return try db.queryOne(Self.reservingSQL, [.uuid(household), .uuid(id)]).map { LedgerTransaction(row: $0) }
    }

    func transactions(household: String, child: String?, before: Int64?, limit: Int) throws -> KeyedPage<LedgerTransaction, Int64> {
        try lock(household)
        let bound = PGValue.int(before ?? Int64.max), count = PGValue.int(Int64(limit) + 1)
        let result = if let child {
            try db.query(Self.childTransactionsSQL, [.uuid(household), .uuid(child), bound, count])
        } else {
            try db.query(Self.householdTransactionsSQL, [.uuid(household), bound, count])
        }
        return KeyedPage(rows: result.rows, limit: limit, item: { LedgerTransaction(row: $0) }) { r, _ in r.int(12) }
    }

    func newestUndoable(household: String, child: String) throws -> LedgerTransaction? {
        try lock(household)
        return try db.queryOne(Self.newestUndoableSQL, [.uuid(household), .uuid(child)]).map { LedgerTransaction(row: $0) }
    }

    func insertChild(_ c: Child, seq: Int64) throws {
        try lock(c.householdId)
        db.later("""
            INSERT INTO children (household_id, id, name, sort_order, archived, created_at, modified_at, modified_by,
                                  change_tag, balance_cents, seq)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
            """, [.uuid(c.householdId), .uuid(c.id), .text(c.name), .int(c.sortOrder), .bool(c.archived),
                  .timestamp(ms: c.createdAt), .timestamp(ms: c.modifiedAt), .uuid(c.modifiedBy), .text(c.changeTag),
                  .int(c.balanceCents), .int(seq)])
    }

    func updateChild(_ c: Child, seq: Int64) throws {
        try lock(c.householdId)
        db.later("""
            UPDATE children SET name = $3, sort_order = $4, archived = $5, modified_at = $6, modified_by = $7,
                change_tag = $8, seq = $9
            WHERE household_id = $1 AND id = $2
            """, [.uuid(c.householdId), .uuid(c.id), .text(c.name), .int(c.sortOrder), .bool(c.archived),
                  .timestamp(ms: c.modifiedAt), .uuid(c.modifiedBy), .text(c.changeTag), .int(seq)])
    }

    func insertTransaction(_ t: LedgerTransaction, reversalId: String, seq: Int64) throws {
        try lock(t.householdId)
        knownFree.remove(t.householdId + " " + t.id)
        knownFree.remove(t.householdId + " " + reversalId)
        heldTransactions.append((t, t.reversesId == nil ? reversalId : nil, seq))
    }

    /// Looks up which of `ids` no transaction of the household holds, as its id or as its
    /// reserved reversal id, in one statement (after the household's lock).
    func expectNewTransactions(household: String, ids: [String]) throws {
        guard writing, !ids.isEmpty else { return }
        try lock(household)
        // A request's payment id counts as taken too: only its approval may write it.
        let rows = try db.query(Self.takenIdsSQL, [.uuid(household), .uuidArray(ids)]).rows
        var taken = Set<String>()
        for r in rows {
            taken.insert(r.uuid(0))
            if !r.isNull(1) { taken.insert(r.uuid(1)) }
        }
        for id in ids where !taken.contains(id.lowercased()) { knownFree.insert(household + " " + id) }
    }

    /// Which of the ids `$2` the household `$1` holds as a transaction's id, a transaction's
    /// reserved reversal id, or a request's payment id. The ids (a binary `uuid[]`) are
    /// unnested once (the CTE) and joined (by index lookups, or over a small household a
    /// hash of the ids); when they came as an array literal cast from text, `col = ANY(…)`
    /// in a filter parsed the literal again for every row of the household's ledger (a
    /// statement prepared once runs a generic plan, where that cast is never folded).
    static let takenIdsSQL = """
        WITH q AS MATERIALIZED (SELECT unnest($2::uuid[]) AS id)
        SELECT t.id, t.reversal_id FROM q JOIN transactions t ON t.household_id = $1 AND t.id = q.id
        UNION ALL SELECT t.id, t.reversal_id FROM q JOIN transactions t ON t.household_id = $1 AND t.reversal_id = q.id
        UNION ALL SELECT r.payment_id, NULL FROM q JOIN requests r ON r.household_id = $1 AND r.payment_id = q.id
        """

    /// Queues the rows held back: per household, one statement for one row as any write
    /// sends it, one for several.
    func sendHeld() {
        guard !heldTransactions.isEmpty || !heldSchedules.isEmpty else { return }
        // Taken first: queuing calls back here (`PGConnection.willQueue`).
        let transactions = heldTransactions, schedules = heldSchedules
        heldTransactions.removeAll()
        heldSchedules.removeAll()
        for rows in Self.byHousehold(transactions, \.t.householdId) {
            if rows.count == 1, let (t, reserved, seq) = rows.first {
                db.later(Self.insertTransactionSQL,
                         [.uuid(t.householdId), .uuid(t.id), .uuid(t.childId), .int(t.amountCents), .text(t.note),
                          .text(t.source.rawValue), .timestamp(ms: t.createdAt), .timestamp(ms: t.recordedAt),
                          .uuid(t.authorAccountId), .optionalUUID(t.reversesId), .optionalUUID(reserved), .int(seq),
                          .optionalUUID(t.potId)])
                continue
            }
            db.later(Self.insertTransactionsSQL, [
                .uuid(rows[0].t.householdId),
                .uuidArray(rows.map(\.t.id)), .uuidArray(rows.map(\.t.childId)),
                .intArray(rows.map(\.t.amountCents)), .textArray(rows.map(\.t.note)),
                .textArray(rows.map(\.t.source.rawValue)),
                .intArray(rows.map(\.t.createdAt)), .intArray(rows.map(\.t.recordedAt)),
                .uuidArray(rows.map(\.t.authorAccountId)), .uuidArray(rows.map(\.t.reversesId)),
                .uuidArray(rows.map(\.reserved)), .intArray(rows.map(\.seq)),
                .uuidArray(rows.map(\.t.potId)),
            ])
        }
        for rows in Self.byHousehold(schedules, \.s.householdId) {
            if rows.count == 1, let (s, seq) = rows.first {
                db.later(Self.updateScheduleSQL, [.uuid(s.householdId), .uuid(s.id), .bool(s.deleted),
                                                  s.dueAt.map { .timestamp(ms: $0) } ?? .null, .text(s.document),
                                                  seq.map { .int($0) } ?? .null])
                continue
            }
            db.later(Self.updateSchedulesSQL, [
                .uuid(rows[0].s.householdId), .uuidArray(rows.map(\.s.id)), .boolArray(rows.map(\.s.deleted)),
                .intArray(rows.map(\.s.dueAt)), .textArray(rows.map(\.s.document)), .intArray(rows.map(\.seq)),
            ])
        }
    }

    /// Holds back the update of a schedule (sent by `sendHeld`); a schedule already held
    /// sends what is held first (one statement updates a row once).
    func holdScheduleUpdate(_ s: ScheduleRecord, seq: Int64?) {
        if heldSchedules.contains(where: { $0.s.id == s.id && $0.s.householdId == s.householdId }) { sendHeld() }
        heldSchedules.append((s, seq))
    }

    /// `rows` grouped by household, in the order each household first appears, each
    /// group in its rows' order.
    private static func byHousehold<Row>(_ rows: [Row], _ household: KeyPath<Row, String>) -> [[Row]] {
        var order: [String] = []
        var groups: [String: [Row]] = [:]
        for r in rows {
            let h = r[keyPath: household]
            if groups[h] == nil { order.append(h) }
            groups[h, default: []].append(r)
        }
        return order.map { groups[$0]! }
    }

    /// A PostgreSQL array literal of `items` (NULL for nil), each element quoted.
    static func arrayLiteral(_ items: [String?]) -> String {
        var size = 2
        for item in items { size += (item?.utf8.count ?? 4) + 3 }
        var out: [UInt8] = []
        out.reserveCapacity(size + 16)
        out.append(UInt8(ascii: "{"))
        for (i, item) in items.enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            guard var item else { out.append(contentsOf: "NULL".utf8); continue }
            out.append(UInt8(ascii: "\""))
            item.withUTF8 { bytes in
                for b in bytes {
                    if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") { out.append(UInt8(ascii: "\\")) }
                    out.append(b)
                }
            }
            out.append(UInt8(ascii: "\""))
        }
        out.append(UInt8(ascii: "}"))
        return String(decoding: out, as: UTF8.self)
    }

    static func arrayLiteral(_ items: [String]) -> String { arrayLiteral(items.map { Optional($0) }) }

    private static let insertTransactionSQL = """
        INSERT INTO transactions (household_id, id, child_id, amount_cents, note, source, created_at, recorded_at,
                                  author_account_id, reverses_id, reversal_id, seq, pot_id)
        VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
        """
    /// Several transactions of the household `$1`, each column an array, in their order
    /// (their `n` ascending in it); times in milliseconds since 1970.
    private static let insertTransactionsSQL = """
        INSERT INTO transactions (household_id, id, child_id, amount_cents, note, source, created_at, recorded_at,
                                  author_account_id, reverses_id, reversal_id, seq, pot_id)
        SELECT $1, r.id, r.child_id, r.amount_cents, r.note, r.source,
               'epoch'::timestamptz + r.created_at * interval '1 millisecond',
               'epoch'::timestamptz + r.recorded_at * interval '1 millisecond', r.author, r.reverses_id, r.reversal_id, r.seq,
               r.pot_id
        FROM unnest($2::uuid[], $3::uuid[], $4::bigint[], $5::text[], $6::text[],
                    $7::bigint[], $8::bigint[], $9::uuid[], $10::uuid[], $11::uuid[],
                    $12::bigint[], $13::uuid[]) WITH ORDINALITY
             AS r(id, child_id, amount_cents, note, source, created_at, recorded_at, author, reverses_id, reversal_id, seq,
                  pot_id, o)
        ORDER BY r.o
        """
    static let updateScheduleSQL = """
        UPDATE schedules SET deleted = $3, due_at = $4, doc = $5, seq = COALESCE($6, seq) WHERE household_id = $1 AND id = $2
        """
    /// Several schedules of the household `$1`, each column an array (`due_at` in
    /// milliseconds since 1970; a NULL `seq` keeps the row's).
    static let updateSchedulesSQL = """
        UPDATE schedules s SET deleted = r.deleted, due_at = 'epoch'::timestamptz + r.due_at * interval '1 millisecond',
               doc = r.doc, seq = COALESCE(r.seq, s.seq)
        FROM unnest($2::uuid[], $3::boolean[], $4::bigint[], $5::text[], $6::bigint[])
             AS r(id, deleted, due_at, doc, seq)
        WHERE s.household_id = $1 AND s.id = r.id
        """

    func markReversed(household: String, id: String, by reversal: String, seq: Int64) throws {
        try lock(household)
        db.later("UPDATE transactions SET reversed_by_id = $3, seq = $4 WHERE household_id = $1 AND id = $2",
                     [.uuid(household), .uuid(id), .uuid(reversal), .int(seq)])
    }

    func setBalance(household: String, child: String, cents: Int64) throws {
        try lock(household)
        unsentBalance[household + " " + child] = (household, child, cents)
    }

    // MARK: sharing

    func participant(household: String, account: String) throws -> Participant? {
        try lock(household)
        return try db.queryOne("""
            SELECT \(Self.participantColumns) FROM participants p JOIN accounts a ON a.id = p.account_id
            WHERE p.household_id = $1 AND p.account_id = $2
            """, [.uuid(household), .uuid(account)]).map { Participant(row: $0) }
    }

    func participant(invitation: String, account: String) throws -> Participant? {
        if writing {
            // Lock the household first, then read the row as it is now.
            guard let h = try db.queryOne("""
                /* global: households of an account */
                SELECT household_id FROM participants WHERE invitation_id = $1 AND account_id = $2
                """, [.uuid(invitation), .uuid(account)])?.uuid(0) else { return nil }
            try lock(h)
        }
        return try db.queryOne("""
            /* global: households of an account */
            SELECT \(Self.participantColumns) FROM participants p
            JOIN accounts a ON a.id = p.account_id WHERE p.invitation_id = $1 AND p.account_id = $2
            """, [.uuid(invitation), .uuid(account)]).map { Participant(row: $0) }
    }

    func participants(household: String) throws -> [Participant] {
        try lock(household)
        return try db.query("""
            SELECT \(Self.participantColumns) FROM participants p JOIN accounts a ON a.id = p.account_id
            WHERE p.household_id = $1 ORDER BY p.invited_at, p.n
            """, [.uuid(household)]).rows.map { Participant(row: $0) }
    }

    func pendingInvitations(account: String, after: InvitationPosition?, limit: Int) throws -> KeyedPage<Invitation, InvitationPosition> {
        let rows = try db.query("""
            /* global: households of an account */
            SELECT p.invitation_id, h.id, h.name, o.display_name, p.permission, p.invited_at, p.n
            FROM participants p JOIN households h ON h.id = p.household_id JOIN accounts o ON o.id = h.owner_account_id
            WHERE p.account_id = $1 AND p.status = 'invited' AND h.shared
              AND (NOT $2 OR p.invited_at < $3 OR (p.invited_at = $3 AND p.n < $4))
            ORDER BY p.invited_at DESC, p.n DESC LIMIT $5
            """, [.uuid(account), .bool(after != nil), .timestamp(ms: after?.invitedAt ?? 0), .int(after?.order ?? 0),
                  .int(Int64(limit) + 1)]).rows
        return KeyedPage(rows: rows, limit: limit, item: { Invitation(row: $0) }) { r, i in
            InvitationPosition(invitedAt: i.invitedAt, order: r.int(6))
        }
    }

    func pendingInvitationCounts(inviter: String, invitee: String) throws -> PendingInvitationCounts {
        // Invitations involving either account wait for this transaction: both account rows
        // are locked (already, by the invitation, before its household: then this is no wait).
        try lockAccounts([inviter, invitee])
        let r = try db.queryOne("""
            /* global: households of an account */
            SELECT (SELECT count(*) FROM households h JOIN participants p ON p.household_id = h.id
                    WHERE h.owner_account_id = $1 AND p.status = 'invited'),
                   (SELECT count(*) FROM participants WHERE account_id = $2 AND status = 'invited'),
                   (SELECT count(*) FROM participants p JOIN households h ON h.id = p.household_id
                    WHERE p.account_id = $2 AND p.status = 'invited' AND h.owner_account_id = $1)
            """, [.uuid(inviter), .uuid(invitee)])
        return PendingInvitationCounts(row: r)
    }

    func pendingInvitationHouseholds(inviter: String, invitee: String) throws -> [String] {
        try db.query("""
            /* global: households of an account */
            SELECT p.household_id FROM participants p JOIN households h ON h.id = p.household_id
            WHERE p.account_id = $2 AND p.status = 'invited' AND h.owner_account_id = $1 ORDER BY p.household_id
            """, [.uuid(inviter), .uuid(invitee)]).rows.map { $0.uuid(0) }
    }

    // MARK: blocks

    func isBlocked(account: String, blocked: String) throws -> Bool {
        try db.queryOne("SELECT 1 FROM blocks WHERE account_id = $1 AND blocked_account_id = $2",
                        [.uuid(account), .uuid(blocked)]) != nil
    }

    func blocks(account: String, before: TimeAndIdPosition?, limit: Int) throws -> KeyedPage<BlockRecord, TimeAndIdPosition> {
        let rows = try db.query("""
            SELECT b.blocked_account_id, a.handle, a.display_name, b.created_at
            FROM blocks b JOIN accounts a ON a.id = b.blocked_account_id
            WHERE b.account_id = $1 AND (NOT $2 OR (b.created_at, b.blocked_account_id) < ($3, $4))
            ORDER BY b.created_at DESC, b.blocked_account_id DESC LIMIT $5
            """, [.uuid(account), .bool(before != nil), .timestamp(ms: before?.time ?? 0), .uuid(before?.id ?? Self.noId),
                  .int(Int64(limit) + 1)]).rows
        return KeyedPage(rows: rows, limit: limit, item: { BlockRecord(row: $0) }) { _, b in
            TimeAndIdPosition(time: b.createdAt, id: b.accountId)
        }
    }

    func insertBlock(account: String, blocked: String, at: Int64) throws -> Bool {
        try db.query("""
            INSERT INTO blocks (account_id, blocked_account_id, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING
            """, [.uuid(account), .uuid(blocked), .timestamp(ms: at)]).affectedRows == 1
    }

    func deleteBlock(account: String, blocked: String) throws -> Bool {
        try db.query("DELETE FROM blocks WHERE account_id = $1 AND blocked_account_id = $2",
                     [.uuid(account), .uuid(blocked)]).affectedRows == 1
    }

    func insertParticipant(household: String, account: String, permission: Membership.Permission,
                           invitation: String, at: Int64) throws {
        accessRead.removeAll()
        try lock(household)
        try db.query("""
            INSERT INTO participants (household_id, account_id, permission, status, invitation_id, invited_at, updated_at)
            VALUES ($1, $2, $3, 'invited', $4, $5, $5)
            """, [.uuid(household), .uuid(account), .text(permission.rawValue), .uuid(invitation), .timestamp(ms: at)])
    }

    func updateParticipant(household: String, account: String, status: Participant.Status,
                           permission: Membership.Permission?, newInvitation: String?, at: Int64) throws {
        accessRead.removeAll()
        try lock(household)
        if let newInvitation {
            try db.query("""
                UPDATE participants SET status = $3, permission = COALESCE($4, permission), invitation_id = $5,
                    invited_at = $6, updated_at = $6, accepted_at = NULL
                WHERE household_id = $1 AND account_id = $2
                """, [.uuid(household), .uuid(account), .text(status.rawValue), .optionalText(permission?.rawValue),
                      .uuid(newInvitation), .timestamp(ms: at)])
        } else {
            try db.query("""
                UPDATE participants SET status = $3, permission = COALESCE($4, permission), updated_at = $5,
                    accepted_at = CASE WHEN $3 = 'accepted' THEN COALESCE(accepted_at, $5) ELSE accepted_at END
                WHERE household_id = $1 AND account_id = $2
                """, [.uuid(household), .uuid(account), .text(status.rawValue), .optionalText(permission?.rawValue),
                      .timestamp(ms: at)])
        }
    }

    func revokeParticipants(household: String, at: Int64) throws {
        accessRead.removeAll()
        try lock(household)
        try db.query("""
            UPDATE participants SET status = 'revoked', updated_at = $2
            WHERE household_id = $1 AND status IN ('invited', 'accepted')
            """, [.uuid(household), .timestamp(ms: at)])
    }

    // MARK: sync

    func head(household: String) throws -> FeedHead? {
        sendDeferred()
        try lock(household)
        return try db.queryOne("SELECT seq, incarnation, (SELECT incarnation FROM database_incarnation) FROM households WHERE id = $1", [.uuid(household)]).map { FeedHead(row: $0) }
    }

    func databaseIncarnation() throws -> Int64 {
        sendDeferred()
        return try db.queryOne("SELECT incarnation FROM database_incarnation WHERE id = 1")?.int(0) ?? 0
    }

    func transactionIds(household: String, child: String?) throws -> [(childId: String, id: String)] {
        sendDeferred()
        try lock(household)
        let result = if let child {
            try db.query("SELECT child_id::text, id::text FROM transactions WHERE household_id = $1 AND child_id = $2",
                         [.uuid(household), .uuid(child)])
        } else {
            try db.query("SELECT child_id::text, id::text FROM transactions WHERE household_id = $1", [.uuid(household)])
        }
        return result.rows.map { (childId: $0.string(0), id: $0.string(1)) }
    }

    func changes(household: String, after: Int64, onlySeq: Int64?, limit: Int) throws -> FeedChanges {
        sendDeferred()
        try lock(household)
        let condition = onlySeq == nil ? "seq > $2" : "seq = $2"
        let params: [PGValue] = [.uuid(household), .int(onlySeq ?? after), .int(Int64(min(limit, Int(Int32.max))))]
        let kids = try db.query("SELECT \(Self.childColumns), seq FROM children WHERE household_id = $1 AND \(condition) ORDER BY seq LIMIT $3", params).rows
        let txs = try db.query("SELECT \(Self.txColumns), seq FROM transactions WHERE household_id = $1 AND \(condition) ORDER BY seq LIMIT $3", params).rows
        let plans = try db.query("SELECT \(Self.scheduleColumns), seq FROM schedules WHERE household_id = $1 AND \(condition) ORDER BY seq LIMIT $3", params)
            .rows.filter { ScheduleRecord(row: $0) != nil }
        let pots = try db.query("SELECT \(Self.potColumns), seq FROM pots WHERE household_id = $1 AND \(condition) ORDER BY seq LIMIT $3", params).rows
        let asked = try db.query("SELECT \(Self.requestColumns), seq FROM requests WHERE household_id = $1 AND \(condition) ORDER BY seq LIMIT $3", params)
            .rows.filter { RequestRecord(row: $0) != nil }
        return FeedChanges(children: [Child](decoding: kids) { Child(row: $0) }, childSeqs: kids.map { $0.int(10) },
                           transactions: [LedgerTransaction](decoding: txs) { LedgerTransaction(row: $0) },
                           transactionSeqs: txs.map { $0.int(12) },
                           schedules: plans.map { ScheduleRecord(row: $0)! }, scheduleSeqs: plans.map { $0.int(5) },
                           pots: try pots.map { try withBalance(PotRecord(row: $0)) }, potSeqs: pots.map { $0.int(12) },
                           requests: asked.map { RequestRecord(row: $0)! }, requestSeqs: asked.map { $0.int(5) })
    }

    func devices(household: String, after: DevicePosition?, limit: Int) throws -> KeyedPage<DeviceSyncRecord, DevicePosition> {
        sendDeferred()
        try lock(household)
        let rows = try db.query("""
            SELECT d.token_id, t.account_id, t.device_name, d.last_pull_at, d.last_push_at,
                   (SELECT count(*) FROM children c WHERE c.household_id = $1 AND c.seq > d.last_pull_seq)
                   + (SELECT count(*) FROM transactions x WHERE x.household_id = $1 AND x.seq > d.last_pull_seq)
                   + (SELECT count(*) FROM schedules s WHERE s.household_id = $1 AND s.seq > d.last_pull_seq)
                   + (SELECT count(*) FROM pots o WHERE o.household_id = $1 AND o.seq > d.last_pull_seq)
            FROM device_sync d JOIN tokens t ON t.id = d.token_id AND t.revoked_at IS NULL
            JOIN households h ON h.id = d.household_id
            WHERE d.household_id = $1 AND (t.account_id = h.owner_account_id OR EXISTS (
                SELECT 1 FROM participants p WHERE p.household_id = $1 AND p.account_id = t.account_id AND p.status = 'accepted'))
              AND (NOT $2 OR (t.account_id, d.token_id) > ($3, $4))
            ORDER BY t.account_id, d.token_id LIMIT $5
            """, [.uuid(household), .bool(after != nil), .uuid(after?.accountId ?? Self.noId), .uuid(after?.tokenId ?? Self.noId),
                  .int(Int64(limit) + 1)]).rows
        return KeyedPage(rows: rows, limit: limit, item: { DeviceSyncRecord(row: $0) }) { _, d in
            DevicePosition(accountId: d.accountId, tokenId: d.tokenId)
        }
    }

    func recordPull(token: String, household: String, seq: Int64, at: Int64) throws {
        // No household lock: a device's progress is not part of the change sequence.
        db.later("""
            INSERT INTO device_sync (token_id, household_id, last_pull_at, last_pull_seq)
            SELECT $1, $2, $3, $4 WHERE EXISTS (SELECT 1 FROM households WHERE id = $2)
            ON CONFLICT (token_id, household_id) DO UPDATE SET last_pull_at = excluded.last_pull_at,
                last_pull_seq = excluded.last_pull_seq
            """, [.uuid(token), .uuid(household), .timestamp(ms: at), .int(seq)])
    }

    func recordPush(token: String, household: String, at: Int64) throws {
        try lock(household)
        db.later("""
            INSERT INTO device_sync (token_id, household_id, last_push_at) VALUES ($1, $2, $3)
            ON CONFLICT (token_id, household_id) DO UPDATE SET last_push_at = excluded.last_push_at
            """, [.uuid(token), .uuid(household), .timestamp(ms: at)])
    }

    func markRestored(household: String, kind: String, id: String, by: String, at: Int64) throws {
        sendDeferred()
        try lock(household)
        _ = try db.query("""
            INSERT INTO restored_records (household_id, kind, id, restored_by, restored_at) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT DO NOTHING
            """, [.uuid(household), .text(kind), .uuid(id), .uuid(by), .timestamp(ms: at)])
    }

    // MARK: operations

    func schemaVersion() throws -> Int {
        Int(try db.queryOne("SELECT COALESCE(MAX(version), 0)::bigint FROM schema_version")?.int(0) ?? 0)
    }
}
#endif
