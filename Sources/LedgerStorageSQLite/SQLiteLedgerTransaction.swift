import LedgerCore
import LedgerModel
import SQLiteKit
import Synchronization

/// The primitives of `LedgerWriting` on one SQLite connection, inside the transaction the
/// read pool or the writer opened.
final class SQLiteLedgerTransaction: LedgerWriting {
    /// The connection as it is: only for statements that neither read nor write a row
    /// `deferred` may hold (a households row's seq, a child's balance).
    let connection: SQLiteConnection
    /// The writer's batch-wide deferred row writes (nil on readers and outside the writer).
    private let deferred: WriterRowState?
    /// The server's id index (nil outside the server: admin commands and tests find a
    /// transaction by its household's rows instead).
    private let keys: TransactionKeys?
    /// The connection, once the deferred row writes are in the database: every statement
    /// but the fast paths' goes through here.
    var db: SQLiteConnection {
        get throws {
            try deferred?.flush(connection, beforeOtherStatements: true)
            return connection
        }
    }
    /// What this write changed: households whose feed moved (or that were deleted) and
    /// tokens revoked.
    @exclusivity(unchecked) private(set) var effects = StorageCommit()

    init(_ db: SQLiteConnection, deferred: WriterRowState? = nil, keys: TransactionKeys? = nil) {
        self.connection = db
        self.deferred = deferred
        self.keys = keys
    }

    // The statements, each built once (the connection caches prepared statements by text).
    static let childColumns =
        "id, household_id, name, sort_order, archived, created_at, modified_at, modified_by, change_tag, balance_cents"
    /// A transaction's columns, read from `ledgerRows`: the household's id from its row.
    static let txColumns = """
        t.id, h.id, t.child_id, t.amount_cents, t.note, t.source, t.created_at, t.recorded_at, t.author_account_id, \
        t.reverses_id, t.reversed_by_id, t.pot_id
        """
    /// The ledger of the household `h.id`: its rows are keyed by the household's ledger key.
    static let ledgerRows = "households h JOIN transactions t ON t.household_key = h.ledger_key"
    private static let householdColumns = "id, name, currency, owner_account_id, created_at, modified_at, change_tag, shared"
    private static let tokenColumns = "id, account_id, device_name, created_at, last_used_at"
    private static let tokenSQL = "SELECT \(tokenColumns) FROM tokens WHERE id = ?"
    /// After the position (`?2` nil: from the first).
    private static let activeTokensSQL = """
        SELECT \(tokenColumns) FROM tokens WHERE account_id = ?1 AND revoked_at IS NULL
          AND (?2 IS NULL OR (created_at, id) > (?2, ?3))
        ORDER BY created_at, id LIMIT ?4
        """
    private static let householdSQL = "SELECT \(householdColumns) FROM households WHERE id = ?"
    private static let childSQL = "SELECT \(childColumns) FROM children WHERE id = ? AND household_id = ?"
    private static let balanceSQL = "SELECT balance_cents FROM children WHERE id = ? AND household_id = ?"
    private static let childrenSQL = """
        SELECT \(childColumns) FROM children WHERE household_id = ? AND (archived = 0 OR ?) ORDER BY sort_order, created_at, id
        """
    /// A transaction by its key (the reversal id of its id) in household `?1`: [the row
    /// `?4` that `keys` named, checked; without `keys`, among the household's rows].
    /// `reservingSQL`: the transaction whose key is `?2` (its reversal would take that id);
    /// `transactionSQL`: the same, and its id `?3`.
    static let reservingSQL = ["t.n = ?4 AND ", ""].map {
        "SELECT \(txColumns) FROM \(ledgerRows) WHERE \($0)h.id = ?1 AND t.reversal_id = ?2"
    }
    static let transactionSQL = reservingSQL.map { $0 + " AND t.id = ?3" }
    static let childTransactionsSQL = """
        SELECT \(txColumns), t.n FROM \(ledgerRows) WHERE h.id = ? AND t.child_id = ? AND t.n < ? ORDER BY t.n DESC LIMIT ?
        """
    /// The household's list without an index of its own (`householdRows`): its children,
    /// then each child's row numbers between two bounds, newest first (from the child index
    /// alone), then the rows chosen, by number.
    static let ledgerKeySQL = "SELECT " + Schema.ledgerKey(1)
    static let householdChildIdsSQL = "SELECT id FROM children WHERE household_id = ?1"
    static let childRowNumbersSQL = """
        SELECT n FROM transactions WHERE household_key = ?1 AND child_id = ?2 AND n < ?3 AND n > ?4 ORDER BY n DESC LIMIT ?5
        """
    /// (The household found once, then each row by its number; the caller orders them.)
    static let rowsByNumberSQL = """
        SELECT \(txColumns), t.n FROM households h CROSS JOIN json_each(?2) j CROSS JOIN transactions t
        WHERE h.id = ?1 AND t.n = j.value AND t.household_key = h.ledger_key
        """
    static let newestUndoableSQL = """
        SELECT \(txColumns) FROM \(ledgerRows)
        WHERE h.id = ? AND t.child_id = ? AND t.reverses_id IS NULL AND t.reversed_by_id IS NULL ORDER BY t.n DESC LIMIT 1
        """
    /// `?2` the household's id; in `keyed` its ledger key.
    static func insertTransactionSQL(keyed: Bool) -> String {
        """
        INSERT INTO transactions (id, household_key, child_id, amount_cents, note, source, created_at, recorded_at,
                                  author_account_id, reverses_id, seq, reversal_id, pot_id)
        VALUES (?1, \(keyed ? "?2" : Schema.ledgerKey(2)), ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)
        """
    }
    /// [by household id, by ledger key].
    static let insertSQL = [false, true].map(insertTransactionSQL(keyed:))
    private static let changedChildrenSQL = [false, true].map { only in
        "SELECT \(childColumns), seq FROM children WHERE household_id = ? AND seq \(only ? "=" : ">") ? ORDER BY seq LIMIT ?"
    }
    static let changedTransactionsSQL = [false, true].map { only in
        "SELECT \(txColumns), t.seq FROM \(ledgerRows) WHERE h.id = ? AND t.seq \(only ? "=" : ">") ? ORDER BY t.seq LIMIT ?"
    }

    func attributeChanges(to token: String) { effects.author = token }

    /// Reports a token revoked by this write (the read cache forgets, long-polls end).
    func noteRevoked(token id: String) { effects.revokedTokens.insert(id) }

    // MARK: accounts and tokens

    func caller(tokenHash: [UInt8]) throws -> Caller? {
        try db.queryOne("SELECT id, account_id, hash FROM tokens WHERE hash = ? AND revoked_at IS NULL", [.blob(tokenHash)])
            .flatMap { Caller(row: $0, hash: tokenHash) }
    }

    func account(id: String) throws -> AccountRecord? {
        try db.queryOne("SELECT id, handle, display_name, created_at FROM accounts WHERE id = ?", [.text(id)]).map { AccountRecord(row: $0) }
    }

    func accountId(handle: String) throws -> String? {
        try db.queryOne("SELECT id FROM accounts WHERE handle = ?", [.text(handle)])?.string(0)
    }

    func token(id: String) throws -> TokenRecord? {
        try db.queryOne(Self.tokenSQL, [.text(id)]).map { TokenRecord(row: $0) }
    }

    func activeTokens(account: String, after: TimeAndIdPosition?, limit: Int) throws -> KeyedPage<TokenRecord, TimeAndIdPosition> {
        let rows = try db.query(Self.activeTokensSQL, [.text(account), after.map { .integer($0.time) } ?? .null,
                                                       .text(after?.id ?? ""), .int(limit + 1)])
        return KeyedPage(rows: rows, limit: limit, item: { TokenRecord(row: $0) }) { _, t in TimeAndIdPosition(time: t.createdAt, id: t.id) }
    }

    func activeTokenCount(account: String) throws -> Int {
        Int(try db.queryOne("SELECT COUNT(*) FROM tokens WHERE account_id = ? AND revoked_at IS NULL", [.text(account)])?.int(0) ?? 0)
    }

    /// The one writer runs write transactions one at a time: nothing to hold.
    func lockAccounts(_ ids: [String]) throws {}

    func isActive(token: String) throws -> Bool {
        try db.queryOne("""
            SELECT 1 FROM tokens WHERE id = ?1 AND revoked_at IS NULL
            UNION ALL SELECT 1 FROM child_tokens WHERE id = ?1 AND revoked_at IS NULL
            """, [.text(token)]) != nil
    }

    func insertAccount(_ a: AccountRecord) throws {
        try db.run("INSERT INTO accounts (id, handle, display_name, created_at) VALUES (?, ?, ?, ?)",
                   [.text(a.id), .text(a.handle), .text(a.displayName), .integer(a.createdAt)])
    }

    func insertToken(_ t: TokenRecord, hash: [UInt8]) throws {
        try db.run("INSERT INTO tokens (id, account_id, hash, device_name, created_at) VALUES (?, ?, ?, ?, ?)",
                   [.text(t.id), .text(t.accountId), .blob(hash), .text(t.deviceName), .integer(t.createdAt)])
    }

    func revokeToken(id: String, account: String, at: Int64) throws -> Bool {
        try db.run("UPDATE tokens SET revoked_at = ? WHERE id = ? AND account_id = ? AND revoked_at IS NULL",
                   [.integer(at), .text(id), .text(account)])
        guard connection.changes == 1 else { return false }
        effects.revokedTokens.insert(id)
        // A signed-out device is woken no more.
        try connection.run("DELETE FROM push_registrations WHERE token_id = ?", [.text(id)])
        return true
    }

    // MARK: households

    func household(id: String) throws -> HouseholdRecord? {
        try db.queryOne(Self.householdSQL, [.text(id)]).map { HouseholdRecord(row: $0) }
    }

    func accessRecord(household: String, account: String) throws -> AccessRecord? {
        if let kept = deferred?.accessRecord(household: household, account: account) { return kept }
        // Reads neither a seq nor a balance: no need to write the deferred rows first.
        guard let r = try connection.queryOne("""
            SELECT h.owner_account_id, p.status, p.permission, p.accepted_at IS NOT NULL, h.ledger_key
            FROM households h LEFT JOIN participants p ON p.household_id = h.id AND p.account_id = ?2
            WHERE h.id = ?1
            """, [.text(household), .text(account)]) else { return nil }
        let record = AccessRecord(row: r)
        deferred?.remember(record, household: household, account: account, ledgerKey: r.optionalInt(4))
        return record
    }

    func households(account: String, after: Int64?, limit: Int) throws -> KeyedPage<HouseholdListing, Int64> {
        let rows = try db.query("""
            SELECT h.id, h.name, h.currency, h.owner_account_id, h.created_at, h.modified_at, h.change_tag, h.shared,
                   p.permission, h.rowid
            FROM households h LEFT JOIN participants p ON p.household_id = h.id AND p.account_id = ?1
            WHERE (h.owner_account_id = ?1 OR p.status = 'accepted') AND h.rowid > ?2
            ORDER BY h.rowid LIMIT ?3
            """, [.text(account), .integer(after ?? 0), .int(limit + 1)])
        return KeyedPage(rows: rows, limit: limit, item: { HouseholdListing(row: $0, account: account) }) { r, _ in r.int(9) }
    }

    func householdCount(owner: String) throws -> Int {
        Int(try db.queryOne("SELECT COUNT(*) FROM households WHERE owner_account_id = ?", [.text(owner)])?.int(0) ?? 0)
    }

    func nextSeq(household: String) throws -> Int64 {
        let seq: Int64
        if let next = deferred?.advanceSeq(household: household) {
            seq = next
        } else {
            seq = try Self.nextSeq(connection, household)
            deferred?.seqWritten(household: household, seq: seq)
        }
        if effects.touched.isEmpty, let deferred {
            effects.touched = deferred.touchedSet(household)
        } else {
            effects.touched.insert(household)
        }
        return seq
    }

    /// The last sequence value handed out per household: a guess, never trusted. nextSeq
    /// advances the row only `WHERE seq = guess`, so a stale guess (a rolled-back batch,
    /// a household deleted and created again) changes nothing and falls back to reading.
    private static let lastSeq = Mutex<[String: Int64]>([:])

    /// Advances the household's change sequence and returns the new value (one statement
    /// while the guess holds); `householdNotFound` when there is no such household.
    static func nextSeq(_ db: SQLiteConnection, _ household: String) throws -> Int64 {
        if let guess = lastSeq.withLock({ $0[household] }) {
            try db.run("UPDATE households SET seq = ?2 WHERE id = ?1 AND seq = ?3", [.text(household), .integer(guess + 1), .integer(guess)])
            if db.changes == 1 {
                lastSeq.withLock { $0[household] = guess + 1 }
                return guess + 1
            }
        }
        // An UPDATE and a SELECT: UPDATE … RETURNING costs an ephemeral table per call.
        try db.run("UPDATE households SET seq = seq + 1 WHERE id = ?", [.text(household)])
        guard db.changes == 1, let row = try db.queryOne("SELECT seq FROM households WHERE id = ?", [.text(household)]) else {
            throw LedgerStorageError.householdNotFound
        }
        let seq = row.int(0)
        rememberSeq(household: household, seq)
        return seq
    }

    /// Records the households row's seq as the next guess.
    static func rememberSeq(household: String, _ seq: Int64) {
        lastSeq.withLock { known in
            if known.count >= 4096 && known[household] == nil { known.removeAll(keepingCapacity: true) }
            known[household] = seq
        }
    }

    func insertHousehold(_ h: HouseholdRecord, incarnation: Int64) throws {
        try db.run("""
            INSERT INTO households (id, name, currency, owner_account_id, created_at, modified_at, change_tag, incarnation, seq,
                                    household_seq, shared, ledger_key)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, 1, 1, ?, \(Schema.nextLedgerKey))
            """, [.text(h.id), .text(h.name), .text(h.currency), .text(h.ownerAccountId), .integer(h.createdAt),
                  .integer(h.modifiedAt), .text(h.changeTag), .integer(incarnation), .bool(h.shared)])
    }

    func updateHousehold(id: String, name: String, currency: String, shared: Bool, modifiedAt: Int64, seq: Int64) throws {
        try db.run("""
            UPDATE households SET name = ?, currency = ?, shared = ?, modified_at = ?, change_tag = ?, household_seq = ? WHERE id = ?
            """, [.text(name), .text(currency), .bool(shared), .integer(modifiedAt), .text(ChangeTag.of(seq)), .integer(seq), .text(id)])
    }

    func deleteHousehold(id: String) throws {
        // Its children's devices end with it (401 from now on, long-polls ended).
        for row in try db.query("DELETE FROM child_tokens WHERE household_id = ? RETURNING id", [.text(id)]) {
            effects.revokedTokens.insert(row.string(0))
        }
        try db.run("DELETE FROM requests WHERE household_id = ?", [.text(id)])
        try db.run("DELETE FROM device_sync WHERE household_id = ?", [.text(id)])
        // The ledger has no foreign key to cascade along.
        try db.run("DELETE FROM transactions WHERE household_key = \(Schema.ledgerKey(1))", [.text(id)])
        try db.run("DELETE FROM schedules WHERE household_id = ?", [.text(id)])
        try db.run("DELETE FROM restored_records WHERE household_key = \(Schema.ledgerKey(1))", [.text(id)])
        try db.run("DELETE FROM households WHERE id = ?", [.text(id)])
        effects.touched.insert(id)
    }

    // MARK: children and transactions

    func child(household: String, id: String) throws -> Child? {
        try db.queryOne(Self.childSQL, [.text(id), .text(household)]).map { Child(row: $0) }
    }

    func balance(household: String, child: String) throws -> Int64? {
        // A balance set in this batch is the child's (its row exists: removing it would have
        // written the deferred rows first, and dropped them).
        if let cents = deferred?.balance(household: household, child: child) { return cents }
        return try connection.queryOne(Self.balanceSQL, [.text(child), .text(household)])?.int(0)
    }

    func children(household: String, includeArchived: Bool) throws -> [Child] {
        try db.query(Self.childrenSQL, [.text(household), .bool(includeArchived)]).map { Child(row: $0) }
    }

    func childCount(household: String) throws -> Int {
        Int(try db.queryOne("SELECT COUNT(*) FROM children WHERE household_id = ?", [.text(household)])?.int(0) ?? 0)
    }

    func transaction(household: String, id: String, reversalId: String?) throws -> LedgerTransaction? {
        guard let key = reversalId ?? NewTransaction.reversalId(of: id) else { return nil }
        return try keyed(Self.transactionSQL, household: household, key: TransactionKeys.Key(reversalId: key), id: id)
    }

    func transaction(household: String, reservingReversalId id: String) throws -> LedgerTransaction? {
        try keyed(Self.reservingSQL, household: household, key: TransactionKeys.Key(reversalId: id), id: nil)
    }

    /// The transaction keyed `key` in `household` (and with id `id`, when given): the row
    /// the id index names, if it is still that transaction, or without the index the
    /// household's row that has it. The transaction columns hold no seq: read without
    /// writing the deferred rows first.
    private func keyed(_ sql: [String], household: String, key: TransactionKeys.Key, id: String?) throws -> LedgerTransaction? {
        if let keys {
            // Most keys asked for are new: absent from the index, no statement to run.
            guard let row = keys.row(household: household, key: key) else { return nil }
            return try connection.queryOne(sql[0], [.text(household), key.stored, id.map { .text($0) } ?? .null, .integer(row)])
                .map { LedgerTransaction(row: $0) }
        }
        var params: [SQLiteValue] = [.text(household), key.stored]
        if let id { params.append(.text(id)) }
        return try connection.queryOne(sql[1], params).map { LedgerTransaction(row: $0) }
    }

    func transactions(household: String, child: String?, before: Int64?, limit: Int) throws -> KeyedPage<LedgerTransaction, Int64> {
        let bound = SQLiteValue.integer(before ?? Int64.max), count = SQLiteValue.int(limit + 1)
        let rows = if let child {
            try db.query(Self.childTransactionsSQL, [.text(household), .text(child), bound, count])
        } else {
            try householdRows(household, below: bound, count: limit + 1)
        }
        return KeyedPage(rows: rows, limit: limit, item: { LedgerTransaction(row: $0) }) { r, _ in r.int(12) }
    }

    /// The household's newest `count` rows below `below`, newest first. The household has no
    /// index of its own: each child's rows come from the child index,
    /// and once `count` rows are held the next child is read only above the oldest of
    /// them, so a page reads its rows and at most `count` more per child. Every row of a
    /// ledger names a child of its household (`check` says so), and children are never
    /// deleted (archived ones stay).
    private func householdRows(_ household: String, below: SQLiteValue, count: Int) throws -> [SQLiteRow] {
        let db = try self.db
        guard let key = try db.queryOne(Self.ledgerKeySQL, [.text(household)])?.optionalInt(0) else { return [] }
        // The newest `count` row numbers of all the children, merged: numbers only, read
        // from the child index; a child is read only above the oldest of a full set.
        var numbers: [Int64] = []
        var floor = Int64.min
        let rowNumbers = try db.prepare(Self.childRowNumbersSQL)
        for child in try db.query(Self.householdChildIdsSQL, [.text(household)]) {
            let before = numbers.count
            try rowNumbers.bind([.integer(key), .text(child.string(0)), below, .integer(floor), .int(count)])
            while try rowNumbers.step() { numbers.append(rowNumbers.int64(0)) }
            if numbers.count == before { continue }
            if numbers.count > count {
                numbers.sort(by: >)
                numbers.removeLast(numbers.count - count)
            }
            if numbers.count == count { floor = numbers.min()! }
        }
        try rowNumbers.finish()
        if numbers.isEmpty { return [] }
        let list = "[" + numbers.map(String.init).joined(separator: ",") + "]"
        return try db.query(Self.rowsByNumberSQL, [.text(household), .text(list)]).sorted { $0.int(12) > $1.int(12) }
    }

    func newestUndoable(household: String, child: String) throws -> LedgerTransaction? {
        try db.queryOne(Self.newestUndoableSQL, [.text(household), .text(child)]).map { LedgerTransaction(row: $0) }
    }

    func insertChild(_ c: Child, seq: Int64) throws {
        try db.run("""
            INSERT INTO children (id, household_id, name, sort_order, archived, created_at, modified_at, modified_by, change_tag,
                                  balance_cents, seq)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, [.text(c.id), .text(c.householdId), .text(c.name), .integer(c.sortOrder), .bool(c.archived), .integer(c.createdAt),
                  .integer(c.modifiedAt), .text(c.modifiedBy), .text(c.changeTag), .integer(c.balanceCents), .integer(seq)])
    }

    func updateChild(_ c: Child, seq: Int64) throws {
        try db.run("""
            UPDATE children SET name = ?, sort_order = ?, archived = ?, modified_at = ?, modified_by = ?, change_tag = ?, seq = ?
            WHERE household_id = ? AND id = ?
            """, [.text(c.name), .integer(c.sortOrder), .bool(c.archived), .integer(c.modifiedAt), .text(c.modifiedBy),
                  .text(c.changeTag), .integer(seq), .text(c.householdId), .text(c.id)])
    }

    func insertTransaction(_ t: LedgerTransaction, reversalId: String, seq: Int64) throws {
        // The rules looked the key up before; no unique index stands behind them since
        // version 8, so a taken key is refused here too (one dictionary lookup).
        let key = TransactionKeys.Key(reversalId: reversalId)
        if let existing = try keyed(Self.reservingSQL, household: t.householdId, key: key, id: nil) {
            throw LedgerStorageError.transactionIdTaken(existing)
        }
        try insertRow(t, key: key, seq: seq, ledgerKey: nil)
    }

    /// Inserts the row and records its key in the id index. Needs only the household's row
    /// (for its ledger key, unless given), which seqs and balances held back for the batch
    /// leave as it is.
    private func insertRow(_ t: LedgerTransaction, key: TransactionKeys.Key, seq: Int64, ledgerKey: Int64?) throws {
        // Bound one by one: an array of the values costs more than the binding.
        try connection.run(Self.insertSQL[ledgerKey == nil ? 0 : 1]) { b in
            try b.text(t.id)
            if let ledgerKey { try b.integer(ledgerKey) } else { try b.text(t.householdId) }
            try b.text(t.childId)
            try b.integer(t.amountCents)
            try b.text(t.note)
            try b.text(t.source.rawValue)
            try b.integer(t.createdAt)
            try b.integer(t.recordedAt)
            try b.text(t.authorAccountId)
            try b.text(t.reversesId)
            try b.integer(seq)
            try key.bind(&b)
            try b.text(t.potId)
        }
        keys?.insert(household: t.householdId, key: key, row: connection.lastInsertRowID)
    }

    /// Only while this batch holds the household's seq: then taking the next one is no
    /// statement, and a key found taken leaves nothing to take back. The batch's first
    /// write to a household looks the id up first, as before.
    func insertsBeforeLookup(household: String) -> Bool {
        deferred?.peekSeq(household: household) != nil
    }

    func insertTransactionIfAbsent(_ t: LedgerTransaction, reversalId: String) throws -> Bool {
        guard let deferred, let seq = deferred.peekSeq(household: t.householdId) else { return false }
        let key = TransactionKeys.Key(reversalId: reversalId)
        // Taken (a replay, or an id in use): the full path answers it.
        if try keyed(Self.reservingSQL, household: t.householdId, key: key, id: nil) != nil { return false }
        try insertRow(t, key: key, seq: seq, ledgerKey: deferred.ledgerKey(household: t.householdId))
        let taken = try nextSeq(household: t.householdId)
        precondition(taken == seq, "the household's seq moved during an insert")
        return true
    }

    func markReversed(household: String, id: String, by reversal: String, seq: Int64) throws {
        // The target's key is its reversal id, which is the reversal's id.
        let key = TransactionKeys.Key(reversalId: reversal)
        var params: [SQLiteValue] = [.text(reversal), .integer(seq), .text(household), .text(id), key.stored]
        if let keys {
            guard let row = keys.row(household: household, key: key) else { return }
            params.append(.integer(row))
        }
        try db.run(Self.markReversedSQL[keys == nil ? 1 : 0], params)
    }

    /// [the row `?6` the id index named, checked; without it, among the household's rows].
    static let markReversedSQL = ["n = ?6 AND ", ""].map {
        """
        UPDATE transactions SET reversed_by_id = ?1, seq = ?2
        WHERE \($0)household_key = \(Schema.ledgerKey(3)) AND reversal_id = ?5 AND id = ?4
        """
    }

    func setBalance(household: String, child: String, cents: Int64) throws {
        if let deferred {
            deferred.setBalance(household: household, child: child, cents: cents)
        } else {
            try Self.writeBalance(db, household: household, child: child, cents: cents)
        }
    }

    /// The child's row takes `cents` as its balance (here, or when held-back rows are written).
    static func writeBalance(_ db: SQLiteConnection, household: String, child: String, cents: Int64) throws {
        try db.run("UPDATE children SET balance_cents = ? WHERE household_id = ? AND id = ?",
                   [.integer(cents), .text(household), .text(child)])
    }

    // MARK: sharing

    private static let participantColumns = """
        p.household_id, p.account_id, a.handle, a.display_name, p.permission, p.status, p.invitation_id, p.invited_at
        """

    func participant(household: String, account: String) throws -> Participant? {
        try db.queryOne("""
            SELECT \(Self.participantColumns) FROM participants p JOIN accounts a ON a.id = p.account_id
            WHERE p.household_id = ? AND p.account_id = ?
            """, [.text(household), .text(account)]).map { Participant(row: $0) }
    }

    func participant(invitation: String, account: String) throws -> Participant? {
        try db.queryOne("""
            SELECT \(Self.participantColumns) FROM participants p JOIN accounts a ON a.id = p.account_id
            WHERE p.invitation_id = ? AND p.account_id = ?
            """, [.text(invitation), .text(account)]).map { Participant(row: $0) }
    }

    func participants(household: String) throws -> [Participant] {
        try db.query("""
            SELECT \(Self.participantColumns) FROM participants p JOIN accounts a ON a.id = p.account_id
            WHERE p.household_id = ? ORDER BY p.invited_at, p.rowid
            """, [.text(household)]).map { Participant(row: $0) }
    }

    func pendingInvitations(account: String, after: InvitationPosition?, limit: Int) throws -> KeyedPage<Invitation, InvitationPosition> {
        let rows = try db.query("""
            SELECT p.invitation_id, h.id, h.name, o.display_name, p.permission, p.invited_at, p.rowid
            FROM participants p JOIN households h ON h.id = p.household_id JOIN accounts o ON o.id = h.owner_account_id
            WHERE p.account_id = ?1 AND p.status = 'invited' AND h.shared = 1
              AND (?2 IS NULL OR p.invited_at < ?2 OR (p.invited_at = ?2 AND p.rowid < ?3))
            ORDER BY p.invited_at DESC, p.rowid DESC LIMIT ?4
            """, [.text(account), after.map { .integer($0.invitedAt) } ?? .null, .integer(after?.order ?? 0), .int(limit + 1)])
        return KeyedPage(rows: rows, limit: limit, item: { Invitation(row: $0) }) { r, i in
            InvitationPosition(invitedAt: i.invitedAt, order: r.int(6))
        }
    }

    func pendingInvitationCounts(inviter: String, invitee: String) throws -> PendingInvitationCounts {
        // The one writer runs write transactions one at a time: the counts hold until it commits.
        let r = try db.queryOne("""
            SELECT (SELECT COUNT(*) FROM households h JOIN participants p ON p.household_id = h.id
                    WHERE h.owner_account_id = ?1 AND p.status = 'invited'),
                   (SELECT COUNT(*) FROM participants WHERE account_id = ?2 AND status = 'invited'),
                   (SELECT COUNT(*) FROM participants p JOIN households h ON h.id = p.household_id
                    WHERE p.account_id = ?2 AND p.status = 'invited' AND h.owner_account_id = ?1)
            """, [.text(inviter), .text(invitee)])
        return PendingInvitationCounts(row: r)
    }

    func pendingInvitationHouseholds(inviter: String, invitee: String) throws -> [String] {
        try db.query("""
            SELECT p.household_id FROM participants p JOIN households h ON h.id = p.household_id
            WHERE p.account_id = ?2 AND p.status = 'invited' AND h.owner_account_id = ?1 ORDER BY p.household_id
            """, [.text(inviter), .text(invitee)]).map { $0.string(0) }
    }

    // MARK: blocks

    func isBlocked(account: String, blocked: String) throws -> Bool {
        try db.queryOne("SELECT 1 FROM blocks WHERE account_id = ? AND blocked_account_id = ?", [.text(account), .text(blocked)]) != nil
    }

    func blocks(account: String, before: TimeAndIdPosition?, limit: Int) throws -> KeyedPage<BlockRecord, TimeAndIdPosition> {
        let rows = try db.query("""
            SELECT b.blocked_account_id, a.handle, a.display_name, b.created_at
            FROM blocks b JOIN accounts a ON a.id = b.blocked_account_id
            WHERE b.account_id = ?1 AND (?2 IS NULL OR (b.created_at, b.blocked_account_id) < (?2, ?3))
            ORDER BY b.created_at DESC, b.blocked_account_id DESC LIMIT ?4
            """, [.text(account), before.map { .integer($0.time) } ?? .null, .text(before?.id ?? ""), .int(limit + 1)])
        return KeyedPage(rows: rows, limit: limit, item: { BlockRecord(row: $0) }) { _, b in
            TimeAndIdPosition(time: b.createdAt, id: b.accountId)
        }
    }

    func insertBlock(account: String, blocked: String, at: Int64) throws -> Bool {
        try db.run("INSERT INTO blocks (account_id, blocked_account_id, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                   [.text(account), .text(blocked), .integer(at)])
        return connection.changes == 1
    }

    func deleteBlock(account: String, blocked: String) throws -> Bool {
        try db.run("DELETE FROM blocks WHERE account_id = ? AND blocked_account_id = ?", [.text(account), .text(blocked)])
        return connection.changes == 1
    }

    func insertParticipant(household: String, account: String, permission: Membership.Permission,
                           invitation: String, at: Int64) throws {
        try db.run("""
            INSERT INTO participants (household_id, account_id, permission, status, invitation_id, invited_at, updated_at)
            VALUES (?, ?, ?, 'invited', ?, ?, ?)
            """, [.text(household), .text(account), .text(permission.rawValue), .text(invitation), .integer(at), .integer(at)])
    }

    func updateParticipant(household: String, account: String, status: Participant.Status,
                           permission: Membership.Permission?, newInvitation: String?, at: Int64) throws {
        if let newInvitation {
            try db.run("""
                UPDATE participants SET status = ?, permission = COALESCE(?, permission), invitation_id = ?,
                    invited_at = ?, updated_at = ?, accepted_at = NULL WHERE household_id = ? AND account_id = ?
                """, [.text(status.rawValue), .optionalText(permission?.rawValue), .text(newInvitation),
                      .integer(at), .integer(at), .text(household), .text(account)])
        } else {
            try db.run("""
                UPDATE participants SET status = ?1, permission = COALESCE(?2, permission), updated_at = ?3,
                    accepted_at = CASE WHEN ?1 = 'accepted' THEN COALESCE(accepted_at, ?3) ELSE accepted_at END
                WHERE household_id = ?4 AND account_id = ?5
                """, [.text(status.rawValue), .optionalText(permission?.rawValue), .integer(at), .text(household), .text(account)])
        }
    }

    func revokeParticipants(household: String, at: Int64) throws {
        try db.run("UPDATE participants SET status = 'revoked', updated_at = ? WHERE household_id = ? AND status IN ('invited', 'accepted')",
                   [.integer(at), .text(household)])
    }

    // MARK: sync

    func head(household: String) throws -> FeedHead? {
        try db.queryOne("SELECT seq, incarnation, (SELECT incarnation FROM database_incarnation) FROM households WHERE id = ?", [.text(household)]).map { FeedHead(row: $0) }
    }

    func databaseIncarnation() throws -> Int64 {
        try db.queryOne("SELECT incarnation FROM database_incarnation WHERE id = 1")?.int(0) ?? 0
    }

    func transactionIds(household: String, child: String?) throws -> [(childId: String, id: String)] {
        let rows = if let child {
            try db.query("SELECT child_id, id FROM transactions WHERE household_key = \(Schema.ledgerKey(1)) AND child_id = ?2",
                         [.text(household), .text(child)])
        } else {
            try db.query("SELECT child_id, id FROM transactions WHERE household_key = \(Schema.ledgerKey(1))", [.text(household)])
        }
        return rows.map { (childId: $0.string(0), id: $0.string(1)) }
    }

    func changes(household: String, after: Int64, onlySeq: Int64?, limit: Int) throws -> FeedChanges {
        let which = onlySeq == nil ? 0 : 1
        let params: [SQLiteValue] = [.text(household), .integer(onlySeq ?? after), .integer(Int64(min(limit, Int(Int32.max))))]
        let kids = try db.query(Self.changedChildrenSQL[which], params)
        let txs = try db.query(Self.changedTransactionsSQL[which], params)
        let plans = try db.query(Self.changedSchedulesSQL[which], params).filter { ScheduleRecord(row: $0) != nil }
        let pots = try db.query(Self.changedPotsSQL[which], params)
        let asked = try db.query(Self.changedRequestsSQL[which], params).filter { RequestRecord(row: $0) != nil }
        // Each record is made in its array's storage (no copy of it on the way).
        return FeedChanges(children: [Child](decoding: kids) { Child(row: $0) }, childSeqs: kids.map { $0.int(10) },
                           transactions: [LedgerTransaction](decoding: txs) { LedgerTransaction(row: $0) },
                           transactionSeqs: txs.map { $0.int(12) },
                           schedules: plans.map { ScheduleRecord(row: $0)! }, scheduleSeqs: plans.map { $0.int(5) },
                           pots: try pots.map { try withBalance(PotRecord(row: $0)) }, potSeqs: pots.map { $0.int(12) },
                           requests: asked.map { RequestRecord(row: $0)! }, requestSeqs: asked.map { $0.int(5) })
    }

    func devices(household: String, after: DevicePosition?, limit: Int) throws -> KeyedPage<DeviceSyncRecord, DevicePosition> {
        let rows = try db.query("""
            SELECT d.token_id, t.account_id, t.device_name, d.last_pull_at, d.last_push_at,
                   (SELECT COUNT(*) FROM children c WHERE c.household_id = ?1 AND c.seq > d.last_pull_seq)
                   + (SELECT COUNT(*) FROM transactions x WHERE x.household_key = h.ledger_key AND x.seq > d.last_pull_seq)
                   + (SELECT COUNT(*) FROM schedules s WHERE s.household_id = ?1 AND s.seq > d.last_pull_seq)
                   + (SELECT COUNT(*) FROM pots o WHERE o.household_id = ?1 AND o.seq > d.last_pull_seq)
            FROM device_sync d JOIN tokens t ON t.id = d.token_id AND t.revoked_at IS NULL
            JOIN households h ON h.id = d.household_id
            WHERE d.household_id = ?1 AND (t.account_id = h.owner_account_id OR EXISTS (
                SELECT 1 FROM participants p WHERE p.household_id = ?1 AND p.account_id = t.account_id AND p.status = 'accepted'))
              AND (?2 IS NULL OR (t.account_id, d.token_id) > (?2, ?3))
            ORDER BY t.account_id, d.token_id LIMIT ?4
            """, [.text(household), after.map { .text($0.accountId) } ?? .null, .text(after?.tokenId ?? ""), .int(limit + 1)])
        return KeyedPage(rows: rows, limit: limit, item: { DeviceSyncRecord(row: $0) }) { _, d in
            DevicePosition(accountId: d.accountId, tokenId: d.tokenId)
        }
    }

    func recordPull(token: String, household: String, seq: Int64, at: Int64) throws {
        try db.run("""
            INSERT INTO device_sync (token_id, household_id, last_pull_at, last_pull_seq)
            SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM households WHERE id = ?2)
            ON CONFLICT (token_id, household_id) DO UPDATE SET last_pull_at = excluded.last_pull_at,
                last_pull_seq = excluded.last_pull_seq
            """, [.text(token), .text(household), .integer(at), .integer(seq)])
    }

    func recordPush(token: String, household: String, at: Int64) throws {
        try db.run("""
            INSERT INTO device_sync (token_id, household_id, last_push_at) VALUES (?, ?, ?)
            ON CONFLICT (token_id, household_id) DO UPDATE SET last_push_at = excluded.last_push_at
            """, [.text(token), .text(household), .integer(at)])
    }

    func markRestored(household: String, kind: String, id: String, by: String, at: Int64) throws {
        try db.run("""
            INSERT OR IGNORE INTO restored_records (household_key, kind, id, restored_by, restored_at)
            VALUES (\(Schema.ledgerKey(1)), ?2, ?3, ?4, ?5)
            """, [.text(household), .text(kind), .text(id), .text(by), .integer(at)])
    }

    // MARK: operations

    func schemaVersion() throws -> Int {
        Int(try db.queryOne("SELECT COALESCE(MAX(version), 0) FROM schema_version")?.int(0) ?? 0)
    }
}
