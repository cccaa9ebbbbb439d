#if Postgres
import Foundation
import LedgerModel
import PostgresKit
import Synchronization
import XCTest
@testable import LedgerCore
@testable import LedgerServer
@testable import LedgerStoragePostgres

/// Commits a storage reported.
private final class CommitLog: Sendable {
    let list = Mutex<[StorageCommit]>([])
}

/// `PostgresLedgerStorage` against the database named by KIDLEDGER_TEST_DATABASE_URL, each
/// test in a schema of its own (skipped when the variable is unset; CI always sets it).
final class PostgresLedgerStorageTests: LedgerStorageContractTests {
    private var url = ""
    private var schema = ""
    private var pg: PostgresLedgerStorage!
    private let commits = CommitLog()

    override func makeBackend() throws -> (any LedgerStorage)? {
        guard let u = ProcessInfo.processInfo.environment["KIDLEDGER_TEST_DATABASE_URL"], !u.isEmpty else {
            throw XCTSkip("KIDLEDGER_TEST_DATABASE_URL is not set")
        }
        url = u
        schema = "ls_" + String(UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(20))
        try PGConnection(url: url).execute("CREATE SCHEMA \(schema)")
        pg = makeStorage()
        XCTAssertEqual(try pg.migrate(), PostgresSchema.migrations.map(\.version))
        return pg
    }

    override func tearDown() {
        pg = nil
        if !schema.isEmpty, let admin = try? PGConnection(url: url) { try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
    }

    private func makeStorage(connections: Int = 8) -> PostgresLedgerStorage {
        let commits = self.commits
        return PostgresLedgerStorage(url: url, connections: connections, setup: ["SET search_path TO \(schema)"]) { c in
            commits.list.withLock { $0.append(c) }
        }
    }

    func testAccountsTokensAndHouseholdIdentity() throws { try checkAccountsTokensAndHouseholdIdentity() }
    func testInsertIfAbsentReversalsUndoAndOverflow() throws { try checkInsertIfAbsentReversalsUndoAndOverflow() }
    func testChildrenCreatePatchAndPush() throws { try checkChildrenCreatePatchAndPush() }
    func testQuotaCounts() throws { try checkQuotaCounts() }
    func testSharingInvitationsAndAccess() throws { try checkSharingInvitationsAndAccess() }
    func testFeedPagesTokensAndSyncStatus() throws { try checkFeedPagesTokensAndSyncStatus() }
    func testInvitationPagesCountsAndQuotas() throws { try checkInvitationPagesCountsAndQuotas() }
    func testPushCountsTokensAndPolls() throws { try checkPushCountsTokensAndPolls() }
    func testBlocksAndInviterForInviteeQuota() throws { try checkBlocksAndInviterForInviteeQuota() }
    func testTokenCapAndPages() throws { try checkTokenCapAndPages() }
    func testPotsAndTransfers() throws { try checkPotsAndTransfers() }

    func testCommitsReportTouchedHouseholdsAndRevokedTokens() throws {
        let now = self.now
        let (owner, h, _) = try household()
        let token = try write { try $0.createToken(account: owner, deviceName: "tablet", now: now) }
        _ = try write { try $0.revokeToken(id: token.record.id, account: owner, at: now) }
        try write { try $0.deleteHousehold(id: h, account: owner) }
        XCTAssertTrue(commits.list.withLock { $0.contains { $0.revokedTokens == [token.record.id] } })
        XCTAssertTrue(commits.list.withLock { $0.contains { $0.touched.contains(h) } })
    }

    /// No foreign key ties a transaction to its child any more (migration 14): a household's
    /// deletion deletes its transactions itself, and only its own.
    func testDeletingAHouseholdDeletesItsTransactionsOnly() throws {
        let now = self.now
        let (owner, h, c) = try household()
        let (other, h2, c2) = try household()
        XCTAssertTrue(try write { try $0.addTransaction(household: h, author: owner, Self.new(c, 7), now: now).saved })
        XCTAssertTrue(try write { try $0.addTransaction(household: h, author: owner, Self.new(c, 8), now: now).saved })
        XCTAssertTrue(try write { try $0.addTransaction(household: h2, author: other, Self.new(c2, 9), now: now).saved })
        let db = try PGConnection(url: url, setup: ["SET search_path TO \(schema)"])
        func count(_ household: String) throws -> Int64 {
            try db.queryOne("SELECT count(*) FROM transactions WHERE household_id = $1", [.uuid(household)])?.int(0) ?? -1
        }
        XCTAssertEqual(try count(h), 2)
        XCTAssertEqual(try db.queryOne("""
            SELECT count(*) FROM pg_constraint WHERE conrelid = 'transactions'::regclass AND contype = 'f'
            """)?.int(0), 0)
        try write { try $0.deleteHousehold(id: h, account: owner) }
        XCTAssertEqual(try count(h), 0)
        XCTAssertEqual(try count(h2), 1)
        // A row the key would have refused (a child of another household) is what `check` reports.
        XCTAssertEqual(try PostgresMaintenance.check(db).problems, [])
        let orphan = UUID().lowercased
        try db.query("""
            INSERT INTO transactions (household_id, id, child_id, amount_cents, note, source, created_at, recorded_at,
                                      author_account_id, reversal_id, seq)
            SELECT id, $1, $2, 0, '', 'api', now(), now(), $3, $4, 99 FROM households WHERE id = $5
            """, [.uuid(orphan), .uuid(c), .uuid(other), .optionalUUID(NewTransaction.reversalId(of: orphan)), .uuid(h2)])
        XCTAssertEqual(try PostgresMaintenance.check(db).problems,
                       ["child: transaction \(orphan) names child \(c), which its household does not have"])
    }

    // MARK: schema

    func testSchemaUsesNativeTypesAndMigratesOnceAcrossThreeStarters() throws {
        let types = try PGConnection(url: url).query("""
            SELECT table_name || '.' || column_name, data_type FROM information_schema.columns
            WHERE table_schema = $1 AND table_name = 'transactions' ORDER BY column_name
            """, [.text(schema)]).rows.reduce(into: [String: String]()) { $0[$1.string(0)] = $1.string(1) }
        XCTAssertEqual(types["transactions.id"], "uuid")
        XCTAssertEqual(types["transactions.amount_cents"], "bigint")
        XCTAssertEqual(types["transactions.created_at"], "timestamp with time zone")
        let identity = try PGConnection(url: url).queryOne("""
            SELECT is_identity FROM information_schema.columns WHERE table_schema = $1 AND table_name = 'transactions' AND column_name = 'n'
            """, [.text(schema)])
        XCTAssertEqual(identity?.string(0), "YES")

        // Three processes starting on a fresh schema: each migration runs once.
        try PGConnection(url: url).execute("DROP SCHEMA \(schema) CASCADE; CREATE SCHEMA \(schema)")
        let results = Mutex<[[Int]]>([])
        let starters = (0..<3).map { _ in makeStorage(connections: 1) }
        DispatchQueue.concurrentPerform(iterations: 3) { i in
            let r = (try? starters[i].migrate()) ?? [-1]
            results.withLock { $0.append(r) }
        }
        XCTAssertEqual(results.withLock { $0 }.sorted { $0.count > $1.count }, [PostgresSchema.migrations.map(\.version), [], []])
        XCTAssertEqual(try PGConnection(url: url, setup: ["SET search_path TO \(schema)"]).queryOne("SELECT count(*) FROM schema_version")?.int(0),
                       Int64(PostgresSchema.migrations.count))
    }

    // MARK: concurrency

    /// 16 writers into one household while a reader pages the feed with `since`: the reader
    /// ends with every acknowledged record exactly once, and the balance is the ledger's sum.
    func testSixteenConcurrentWritersAndAFeedReaderSeeEveryRecordOnce() throws {
        let now = self.now
        let (owner, h, c) = try household()
        pg = makeStorage(connections: 17)
        let perWriter = 25
        let acknowledged = Mutex<[String]>([])
        let writersDone = Mutex(0)
        let seen = Mutex<[String]>([])
        let storage = self.pg!
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            var since: SyncPosition?
            var finished = false
            while true {
                let done = writersDone.withLock { $0 } == 16
                do {
                    let page = try storage.read { try $0.feedPage(household: h, account: owner, since: since, limit: 7) }
                    seen.withLock { $0 += page.transactions.map(\.id) }
                    since = page.next
                    if finished && !page.moreComing { break }
                    if done && !page.moreComing { finished = true }
                } catch {
                    XCTFail("reader: \(error)"); break
                }
            }
        }
        DispatchQueue.concurrentPerform(iterations: 16) { w in
            for i in 0..<perWriter {
                let t = NewTransaction(id: UUID().lowercased, childId: c, amountCents: Int64(w * 100 + i), note: "",
                                       source: .api, createdAt: nil, reversesId: nil, clientChosenId: true)
                do {
                    let r = try storage.writeNow { try $0.addTransaction(household: h, author: owner, t, now: now) }
                    XCTAssertTrue(r.saved)
                    acknowledged.withLock { $0.append(t.id) }
                } catch {
                    XCTFail("writer \(w): \(error)")
                }
            }
            writersDone.withLock { $0 += 1 }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 120), .success)
        let ids = seen.withLock { $0 }
        XCTAssertEqual(ids.count, 16 * perWriter, "every record exactly once")
        XCTAssertEqual(Set(ids), Set(acknowledged.withLock { $0 }))
        let expected = (0..<16).reduce(Int64(0)) { s, w in s + (0..<perWriter).reduce(Int64(0)) { $0 + Int64(w * 100 + $1) } }
        XCTAssertEqual(try storage.read { try $0.child(household: h, id: c) }?.balanceCents, expected)
        // The change sequence has no gaps: one value per write, plus the child's creation.
        XCTAssertEqual(try storage.read { try $0.head(household: h) }?.seq, Int64(2 + 16 * perWriter))
    }

    /// Group commit: writes about several households, sent at once through two storages
    /// (two processes) — new ones, identical replays racing each other, and refused ones
    /// (an unknown child) — are answered each as if alone: every new record saved once,
    /// every replay unchanged, every refusal refused with nothing left behind, balances the
    /// sums of what was acknowledged, the change sequence without gaps, fewer transactions
    /// than writes, and no deadlock between batches that hold several households.
    func testGroupCommitAnswersEachWriteAsIfAlone() throws {
        let now = self.now
        let (owner, h1, c1) = try household()
        let h2 = UUID().lowercased, c2 = UUID().lowercased
        _ = try write { tx in
            _ = try tx.createHousehold(id: h2, name: "Other", currency: "EUR", owner: owner, ifAbsentOnly: true, now: now)
            return try tx.createChild(household: h2, account: owner, id: c2, name: "Bo", sortOrder: nil, now: now).isCreated
        }
        let a = makeStorage(connections: 8), b = makeStorage(connections: 8)
        let admin = try PGConnection(url: url)
        let deadlocks = { try admin.queryOne("SELECT deadlocks FROM pg_stat_database WHERE datname = current_database()")?.int(0) ?? 0 }
        let deadlocksBefore = try deadlocks()
        commits.list.withLock { $0.removeAll() }

        enum Kind { case fresh, replay, refused }
        struct Planned { let household: String; let t: NewTransaction; let kind: Kind }
        let replayed = [Self.new(c1, 7), Self.new(c2, 9)]
        let plan: [Planned] = (0..<240).map { i in
            let (h, c) = i % 2 == 0 ? (h1, c1) : (h2, c2)
            switch i % 8 {
            case 3, 4: return Planned(household: h, t: replayed[i % 2], kind: .replay)
            case 5: return Planned(household: h, t: Self.new(UUID().lowercased, 1), kind: .refused)
            default: return Planned(household: h, t: Self.new(c, Int64(i)), kind: .fresh)
            }
        }
        let outcomes = Mutex<[Int: Result<TransactionWrite, any Error>]>([:])
        let group = DispatchGroup()
        DispatchQueue.concurrentPerform(iterations: plan.count) { i in
            let p = plan[i]
            group.enter()
            (i % 2 == 0 ? a : b).write(household: p.household, { w in
                _ = try w.membership(household: p.household, account: owner, need: .write)
                return try w.addTransaction(household: p.household, author: owner, p.t, now: now)
            }, completion: { r in
                outcomes.withLock { $0[i] = r }
                group.leave()
            })
        }
        XCTAssertEqual(group.wait(timeout: .now() + 60), .success)
        let results = outcomes.withLock { $0 }
        var expected: [String: Int64] = [h1: 0, h2: 0]
        var replaysSaved = 0
        for (i, p) in plan.enumerated() {
            switch (p.kind, results[i]) {
            case (.fresh, .success(let w)?):
                XCTAssertTrue(w.saved)
                expected[p.household]! += p.t.amountCents
            case (.replay, .success(let w)?):
                if w.saved { replaysSaved += 1; expected[p.household]! += p.t.amountCents }
            case (.refused, .failure(let e)?):
                XCTAssertEqual(e as? LedgerStorageError, .childNotFound)
            default:
                XCTFail("write \(i) (\(p.kind)): \(String(describing: results[i]))")
            }
        }
        XCTAssertEqual(replaysSaved, 2, "each replayed record saved once")
        XCTAssertEqual(try storage.read { try $0.child(household: h1, id: c1) }?.balanceCents, expected[h1])
        XCTAssertEqual(try storage.read { try $0.child(household: h2, id: c2) }?.balanceCents, expected[h2])
        // Each household: its creation, its child, then one change per saved record.
        let saved = plan.filter { $0.kind == .fresh }.count + 2
        let seqs = try [h1, h2].map { h in try storage.read { try $0.head(household: h) }?.seq ?? 0 }
        XCTAssertEqual(seqs.reduce(0, +), Int64(2 * 2 + saved))
        let transactions = commits.list.withLock { $0.count }
        XCTAssertLessThan(transactions, plan.count / 2, "writes shared transactions")
        Thread.sleep(forTimeInterval: 1.2)   // statistics reach pg_stat_database within a second
        XCTAssertEqual(try deadlocks(), deadlocksBefore)
    }

    /// A write's last statements travel with the next write's first (one round trip): when
    /// one of them fails, the write it belongs to is the one refused and undone — not
    /// answered as saved — and the next write, which never ran, runs again and is saved.
    func testAQueuedStatementThatFailsIsChargedToItsOwnWrite() throws {
        let now = self.now
        let (owner, h, c) = try household()
        let storage = makeStorage(connections: 8)   // one committer: the two writes below share a batch
        let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let results = Mutex<[Int: Result<Bool, any Error>]>([:])
        let done = DispatchGroup()
        func submit(_ n: Int, _ body: @escaping @Sendable (any LedgerWriting) throws -> Bool) {
            done.enter()
            storage.write(household: h, body) { r in
                results.withLock { $0[n] = r }
                done.leave()
            }
        }
        // Holds the committer while the next two queue up behind it.
        submit(0) { _ in started.signal(); release.wait(); return true }
        XCTAssertEqual(started.wait(timeout: .now() + 10), .success)
        submit(1) { w in
            (w as? PostgresLedgerTransaction)?.db.later("SELECT 1 / $1", [.int(0)])   // fails when sent
            return true
        }
        let t = Self.new(c, 5)
        submit(2) { w in try w.addTransaction(household: h, author: owner, t, now: now).saved }
        release.signal()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        let r = results.withLock { $0 }
        XCTAssertEqual(try r[0]?.get(), true)
        XCTAssertThrowsError(try r[1]?.get()) { e in XCTAssertEqual((e as? PGError)?.sqlState, "22012") }
        XCTAssertEqual(try r[2]?.get(), true)
        XCTAssertEqual(try storage.read { try $0.child(household: h, id: c) }?.balanceCents, 5)
        XCTAssertNotNil(try storage.read { try $0.transaction(household: h, id: t.id) })
    }

    /// Queues `bodies` behind a write that holds the only committer, so they share one
    /// batch (of the next round), and waits for every answer.
    private func batched<T: Sendable>(_ storage: PostgresLedgerStorage, holding household: String,
                                      _ bodies: [(household: String, lookahead: WriteLookahead?,
                                                  body: @Sendable (any LedgerWriting) throws -> T)]) -> [Result<T, any Error>] {
        let started = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        let results = Mutex<[Int: Result<T, any Error>]>([:])
        let done = DispatchGroup()
        done.enter()
        storage.write(household: household, { _ in started.signal(); release.wait(); return true }) { _ in done.leave() }
        XCTAssertEqual(started.wait(timeout: .now() + 10), .success)
        for (n, b) in bodies.enumerated() {
            done.enter()
            let answer: @Sendable (Result<T, any Error>) -> Void = { r in
                results.withLock { $0[n] = r }
                done.leave()
            }
            if let lookahead = b.lookahead {
                storage.write(household: b.household, lookahead: lookahead, answeringOn: nil, b.body, completion: answer)
            } else {
                storage.write(household: b.household, b.body, completion: answer)
            }
        }
        release.signal()
        XCTAssertEqual(done.wait(timeout: .now() + 30), .success)
        let r = results.withLock { $0 }
        return bodies.indices.map { r[$0] ?? .failure(LedgerStorageError.unavailable(commitOutcomeUnknown: false)) }
    }

    /// Writes whose first lookup their batch read ahead (with its locks, in one round trip)
    /// answer as if alone: fresh ones are saved, a replay and an id written earlier in the
    /// batch answer the stored record, a stranger, another household's child and a missing
    /// household are refused, and a child added by an earlier write of the batch (not read
    /// ahead) is found.
    func testReadAheadWritesOfOneBatchAnswerAsIfAlone() throws {
        let now = self.now
        let (owner, h1, c1) = try household()
        let (other, h2, c2) = try household()
        let storage = makeStorage(connections: 8)   // one committer
        let replayed = Self.new(c1, 7)
        XCTAssertTrue(try write { try $0.addTransaction(household: h1, author: owner, replayed, now: now).saved })
        let twice = Self.new(c2, 11)
        let newChild = UUID().lowercased, toNewChild = Self.new(newChild, 13)
        let fresh1 = Self.new(c1, 100), fresh2 = Self.new(c2, 200), fresh3 = Self.new(c1, 1000)
        let stranger = Self.new(c1, 5), foreignChild = Self.new(c2, 3), nowhere = Self.new(c1, 1)
        let missing = UUID().lowercased
        func post(_ h: String, _ author: String, _ t: NewTransaction) -> (household: String, lookahead: WriteLookahead?,
                                                                          body: @Sendable (any LedgerWriting) throws -> TransactionWrite?) {
            (h, WriteLookahead(account: author, transactionId: t.id, child: t.childId), { w in
                try w.addTransaction(household: h, author: author, t, now: now, checkingAccess: .write)
            })
        }
        let addChild: (household: String, lookahead: WriteLookahead?, body: @Sendable (any LedgerWriting) throws -> TransactionWrite?) =
            (h2, nil, { w in
                _ = try w.createChild(household: h2, account: other, id: newChild, name: "New", sortOrder: nil, now: now)
                return nil
            })
        let first = post(h1, owner, fresh1)
        let readAhead: (household: String, lookahead: WriteLookahead?, body: @Sendable (any LedgerWriting) throws -> TransactionWrite?) =
            (h1, first.lookahead, { w in
                // Read with the batch's locks: no statement of its own.
                let known = (w as? PostgresLedgerTransaction)?.knownFree.contains(h1 + " " + fresh1.id) ?? false
                guard known else { throw LedgerStorageError.transactionNotFound }
                return try first.body(w)
            })
        let r = batched(storage, holding: UUID().lowercased, [
            readAhead,                            // 0
            post(h2, other, fresh2),              // 1
            post(h1, owner, replayed),            // 2: stored before the batch
            post(h2, other, twice),               // 3
            post(h2, other, twice),               // 4: the same, again in the batch
            post(h2, other, toNewChild),          // 5: no such child yet
            addChild,                             // 6
            post(h2, other, toNewChild),          // 7: added by 6
            post(h1, other, stranger),            // 8: no access
            post(h1, owner, foreignChild),        // 9: a child of another household
            post(missing, owner, nowhere),        // 10
            post(h1, owner, fresh3),              // 11
        ])
        XCTAssertEqual(try r[0].get()?.balanceCents, 100 + 7)
        XCTAssertEqual(try r[1].get()?.balanceCents, 200)
        XCTAssertEqual(try r[2].get()?.saved, false)
        XCTAssertEqual(try r[2].get()?.transaction.id, replayed.id)
        XCTAssertEqual(try r[3].get()?.saved, true)
        XCTAssertEqual(try r[3].get()?.balanceCents, 211)
        XCTAssertEqual(try r[4].get()?.saved, false)
        XCTAssertEqual(try r[4].get()?.balanceCents, 211)
        XCTAssertThrowsError(try r[5].get()) { XCTAssertEqual($0 as? LedgerStorageError, .childNotFound) }
        XCTAssertNoThrow(try r[6].get())
        XCTAssertEqual(try r[7].get()?.balanceCents, 13)
        XCTAssertThrowsError(try r[8].get()) { XCTAssertEqual($0 as? LedgerStorageError, .householdNotFound) }
        XCTAssertThrowsError(try r[9].get()) { XCTAssertEqual($0 as? LedgerStorageError, .childNotFound) }
        XCTAssertThrowsError(try r[10].get()) { XCTAssertEqual($0 as? LedgerStorageError, .householdNotFound) }
        XCTAssertEqual(try r[11].get()?.balanceCents, 1107)
        XCTAssertEqual(try storage.read { try $0.child(household: h1, id: c1) }?.balanceCents, 1107)
        XCTAssertEqual(try storage.read { try $0.child(household: h2, id: c2) }?.balanceCents, 211)
        XCTAssertEqual(try storage.read { try $0.child(household: h2, id: newChild) }?.balanceCents, 13)
        XCTAssertNil(try storage.read { try $0.transaction(household: h1, id: stranger.id) })
        XCTAssertNil(try storage.read { try $0.transaction(household: h1, id: foreignChild.id) })
        // h1: household, child, the replayed record, then two saved here; h2: household,
        // child, three saved and the new child.
        XCTAssertEqual(try storage.read { try $0.head(household: h1) }?.seq, 5)
        XCTAssertEqual(try storage.read { try $0.head(household: h2) }?.seq, 6)
    }

    /// A write whose statements, read ahead, first travel with the batch's COMMIT: when one
    /// of them fails, that write alone is refused; the others of the batch (none committed,
    /// none answered) run again and are saved.
    func testAStatementFailingWithTheCommitIsChargedToItsWrite() throws {
        let now = self.now
        let (owner, h, c) = try household()
        let (owner2, h2, c2) = try household()
        let storage = makeStorage(connections: 8)
        let a = Self.new(c, 5), b = Self.new(c2, 6)
        let r: [Result<Bool, any Error>] = batched(storage, holding: UUID().lowercased, [
            (h, WriteLookahead(account: owner, transactionId: a.id, child: c), { @Sendable w in
                try w.addTransaction(household: h, author: owner, a, now: now, checkingAccess: .write).saved
            }),
            (h, nil, { @Sendable w in
                (w as? PostgresLedgerTransaction)?.db.later("SELECT 1 / $1", [.int(0)])   // fails when sent
                return true
            }),
            (h2, WriteLookahead(account: owner2, transactionId: b.id, child: c2), { @Sendable w in
                try w.addTransaction(household: h2, author: owner2, b, now: now, checkingAccess: .write).saved
            }),
        ])
        XCTAssertEqual(try r[0].get(), true)
        XCTAssertThrowsError(try r[1].get()) { e in XCTAssertEqual((e as? PGError)?.sqlState, "22012") }
        XCTAssertEqual(try r[2].get(), true)
        XCTAssertEqual(try storage.read { try $0.child(household: h, id: c) }?.balanceCents, 5)
        XCTAssertEqual(try storage.read { try $0.child(household: h2, id: c2) }?.balanceCents, 6)
        XCTAssertEqual(try storage.read { try $0.head(household: h) }?.seq, 3)
    }

    /// A lookahead naming something that is not a UUID is not read ahead (the statement
    /// would fail for the whole batch): the other writes of the batch are saved.
    func testALookaheadThatIsNotAUUIDFailsNoOtherWrite() throws {
        let now = self.now
        let (owner, h, c) = try household()
        let storage = makeStorage(connections: 8)
        let a = Self.new(c, 5), forged = Self.new(c, 7)
        let r: [Result<Bool, any Error>] = batched(storage, holding: UUID().lowercased, [
            (h, WriteLookahead(account: owner, transactionId: forged.id, child: "c'); DROP TABLE children; --"), { @Sendable w in
                try w.addTransaction(household: h, author: owner, forged, now: now, checkingAccess: .write).saved
            }),
            (h, WriteLookahead(account: owner, transactionId: a.id, child: c), { @Sendable w in
                try w.addTransaction(household: h, author: owner, a, now: now, checkingAccess: .write).saved
            }),
        ])
        XCTAssertEqual(try r[0].get(), true)
        XCTAssertEqual(try r[1].get(), true)
        XCTAssertEqual(try storage.read { try $0.child(household: h, id: c) }?.balanceCents, 12)
    }

    /// A write that sends nothing while it runs has no savepoint: when its rows, sent as it
    /// ends, fail with the next write's first statement, that write alone is refused and
    /// the others of the batch run again and are saved.
    func testAWriteWithoutASavepointThatFailsLaterIsRefusedAlone() throws {
        let now = self.now
        let (owner, h, c) = try household()
        let (owner2, h2, c2) = try household()
        let storage = makeStorage(connections: 8)
        let a = Self.new(c, 5), bogus = Self.new(c, 9), d = Self.new(c2, 6)
        let r: [Result<Bool, any Error>] = batched(storage, holding: UUID().lowercased, [
            (h, WriteLookahead(account: owner, transactionId: a.id, child: c), { @Sendable w in
                try w.addTransaction(household: h, author: owner, a, now: now, checkingAccess: .write).saved
            }),
            (h, nil, { @Sendable w in
                // An instant before PostgreSQL's first (4714 BC), written without the rules:
                // the row fails once sent.
                var row = bogus.record(household: h, author: owner, now: now)
                row.createdAt = -300_000_000_000_000
                try w.insertTransaction(row, reversalId: bogus.reversalId, seq: try w.nextSeq(household: h))
                return true
            }),
            (h2, nil, { @Sendable w in
                try w.addTransaction(household: h2, author: owner2, d, now: now, checkingAccess: .write).saved
            }),
        ])
        XCTAssertEqual(try r[0].get(), true)
        XCTAssertThrowsError(try r[1].get()) { e in XCTAssertEqual((e as? PGError)?.sqlState, "22008") }
        XCTAssertEqual(try r[2].get(), true)
        XCTAssertEqual(try storage.read { try $0.child(household: h, id: c) }?.balanceCents, 5)
        XCTAssertEqual(try storage.read { try $0.child(household: h2, id: c2) }?.balanceCents, 6)
        XCTAssertEqual(try storage.read { try $0.head(household: h) }?.seq, 3)
        XCTAssertNil(try storage.read { try $0.transaction(household: h, id: bogus.id) })
    }

    /// The session lost while a batch's statements are on their way (with its COMMIT):
    /// every write of the batch is answered with an error, and none of them was saved.
    func testASessionLostBeforeTheCommitAnswersEveryWriteAndSavesNone() throws {
        let now = self.now
        let (owner, h, c) = try household()
        let (owner2, h2, c2) = try household()
        let storage = makeStorage(connections: 8)
        let admin = try PGConnection(url: url)
        let a = Self.new(c, 5), b = Self.new(c2, 6), d = Self.new(c, 7)
        let r: [Result<Bool, any Error>] = batched(storage, holding: UUID().lowercased, [
            (h, WriteLookahead(account: owner, transactionId: a.id, child: c), { @Sendable w in
                try w.addTransaction(household: h, author: owner, a, now: now, checkingAccess: .write).saved
            }),
            (h2, WriteLookahead(account: owner2, transactionId: b.id, child: c2), { @Sendable w in
                let saved = try w.addTransaction(household: h2, author: owner2, b, now: now, checkingAccess: .write).saved
                // The batch's own session ends before anything after its locks was sent.
                let pid = (w as? PostgresLedgerTransaction)?.db.backendPID ?? 0
                _ = try? admin.query("SELECT pg_terminate_backend($1::integer)", [.int(Int64(pid))])
                Thread.sleep(forTimeInterval: 0.2)
                return saved
            }),
            (h, WriteLookahead(account: owner, transactionId: d.id, child: c), { @Sendable w in
                try w.addTransaction(household: h, author: owner, d, now: now, checkingAccess: .write).saved
            }),
        ])
        for (n, result) in r.enumerated() {
            XCTAssertThrowsError(try result.get(), "write \(n)") { e in
                guard case .unavailable? = e as? LedgerStorageError else { return XCTFail("write \(n): \(e)") }
            }
        }
        XCTAssertEqual(try storage.read { try $0.child(household: h, id: c) }?.balanceCents, 0)
        XCTAssertEqual(try storage.read { try $0.child(household: h2, id: c2) }?.balanceCents, 0)
        for t in [a, d] { XCTAssertNil(try storage.read { try $0.transaction(household: h, id: t.id) }) }
        XCTAssertNil(try storage.read { try $0.transaction(household: h2, id: b.id) })
        XCTAssertEqual(try storage.read { try $0.head(household: h) }?.seq, 2)
    }

    /// Identical requests racing: one is saved, the others see it and answer unchanged;
    /// identical household PUTs racing on a fresh id: one creates, the others find it.
    func testConcurrentIdenticalWritesAreIdempotent() throws {
        let now = self.now
        let (owner, h, c) = try household()
        pg = makeStorage(connections: 8)
        let storage = self.pg!
        let t = Self.new(c, 42)
        let saved = Mutex(0), unchanged = Mutex(0), failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                let r = try storage.writeNow { try $0.addTransaction(household: h, author: owner, t, now: now) }
                if r.saved { saved.withLock { $0 += 1 } } else { unchanged.withLock { $0 += 1 } }
            } catch { failures.withLock { $0.append("\(error)") } }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(saved.withLock { $0 }, 1)
        XCTAssertEqual(unchanged.withLock { $0 }, 7)
        XCTAssertEqual(try storage.read { try $0.child(household: h, id: c) }?.balanceCents, 42)

        let fresh = UUID().lowercased
        let created = Mutex(0), found = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                let w = try storage.writeNow { try $0.createHousehold(id: fresh, name: "Race", currency: "EUR", owner: owner,
                                                                      ifAbsentOnly: false, now: now) }
                if w.isCreated { created.withLock { $0 += 1 } } else { found.withLock { $0 += 1 } }
            } catch { failures.withLock { $0.append("\(error)") } }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(created.withLock { $0 }, 1)
        XCTAssertEqual(found.withLock { $0 }, 7)
    }

    /// Eight new households of one account at once, with three allowed per account: three
    /// are created and five refused (the owner's row is locked before counting).
    func testConcurrentHouseholdsStayWithinTheAccountQuota() throws {
        let now = self.now
        let (owner, _) = try write { try $0.createAccount(handle: "busy", displayName: "B", deviceName: "phone", now: now) }
        let storage = self.pg!
        let created = Mutex(0), refused = Mutex(0), failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            do {
                _ = try storage.writeNow { try $0.createHousehold(id: UUID().lowercased, name: "Race", currency: "EUR", owner: owner.id,
                                                                  ifAbsentOnly: true, maxHouseholds: 3, now: now) }
                created.withLock { $0 += 1 }
            } catch LedgerStorageError.tooManyHouseholds(limit: 3) {
                refused.withLock { $0 += 1 }
            } catch { failures.withLock { $0.append("\(error)") } }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(created.withLock { $0 }, 3)
        XCTAssertEqual(refused.withLock { $0 }, 5)
        XCTAssertEqual(try storage.read { try $0.householdCount(owner: owner.id) }, 3)
    }

    /// Owners of eight households invite the same parent at once, with one pending
    /// invitation allowed per invitee: exactly one invitation is made.
    func testConcurrentInvitationsStayWithinTheInviteeQuota() throws {
        let now = self.now
        _ = try write { try $0.createAccount(handle: "popular", displayName: "P", deviceName: "phone", now: now) }
        let homes = try (0..<8).map { _ in try household() }
        for (owner, h, _) in homes { _ = try write { try $0.share(household: h, owner: owner) } }
        pg = makeStorage(connections: 8)
        let storage = self.pg!
        let created = Mutex(0), refused = Mutex(0), failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            let (owner, h, _) = homes[i]
            do {
                let w = try storage.writeNow { try $0.invite(household: h, owner: owner, handle: "popular", permission: .readOnly,
                                                             limits: InvitationLimits(perInviter: 0, perInvitee: 1), now: now) }
                if w.isCreated { created.withLock { $0 += 1 } }
            } catch LedgerStorageError.tooManyInvitations(.invitee, limit: 1, pending: 1) {
                refused.withLock { $0 += 1 }
            } catch { failures.withLock { $0.append("\(error)") } }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(created.withLock { $0 }, 1)
        XCTAssertEqual(refused.withLock { $0 }, 7)
    }

    /// Eight new tokens of one account at once, with three live ones allowed and one
    /// already there: two are made and six refused (the account's row is locked before
    /// counting).
    func testConcurrentTokensStayWithinTheAccountCap() throws {
        let now = self.now
        let (owner, _) = try write { try $0.createAccount(handle: "devices", displayName: "D", deviceName: "phone", now: now) }
        let storage = self.pg!
        let created = Mutex(0), refused = Mutex(0), failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 8) { i in
            do {
                _ = try storage.writeNow { try $0.createToken(account: owner.id, deviceName: "d\(i)", maxTokens: 3, now: now) }
                created.withLock { $0 += 1 }
            } catch LedgerStorageError.tooManyTokens(limit: 3) {
                refused.withLock { $0 += 1 }
            } catch { failures.withLock { $0.append("\(error)") } }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(created.withLock { $0 }, 2)
        XCTAssertEqual(refused.withLock { $0 }, 6)
        XCTAssertEqual(try storage.read { try $0.activeTokenCount(account: owner.id) }, 3)
    }

    /// A stranger invites one parent from eight households while the parent declines the
    /// stranger's first invitation with a block: every invitation either came first (and
    /// the block declined it) or came after (and was refused as an unknown handle). None is
    /// left pending, and no write waited for another in a circle (each body ran once).
    func testInvitationsRacingABlockLeaveNonePendingAndNeverDeadlock() throws {
        let now = self.now
        let (stranger, h0, _) = try household()
        let homes = [h0] + (0..<8).map { _ in UUID().lowercased }
        for h in homes.dropFirst() {
            _ = try write { try $0.createHousehold(id: h, name: "Trap", currency: "EUR", owner: stranger, ifAbsentOnly: true, now: now) }
        }
        for h in homes { _ = try write { try $0.share(household: h, owner: stranger) } }
        let (victim, _) = try write { try $0.createAccount(handle: "target", displayName: "T", deviceName: "phone", now: now) }
        let first = try write { try $0.invite(household: h0, owner: stranger, handle: "target", permission: .readOnly, now: now) }.record
        pg = makeStorage(connections: 10)
        let storage = self.pg!
        let attempts = Mutex(0), invited = Mutex(0), refused = Mutex(0), failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 9) { i in
            do {
                if i == 0 {
                    try storage.writeNow { w in
                        attempts.withLock { $0 += 1 }
                        try w.declineInvitation(first.invitationId, account: victim.id, block: true, now: now)
                    }
                } else {
                    let w = try storage.writeNow { w in
                        attempts.withLock { $0 += 1 }
                        return try w.invite(household: homes[i], owner: stranger, handle: "target", permission: .readOnly, now: now)
                    }
                    if w.isCreated { invited.withLock { $0 += 1 } }
                }
            } catch LedgerStorageError.unknownHandle("target") {
                refused.withLock { $0 += 1 }
            } catch { failures.withLock { $0.append("\(error)") } }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(invited.withLock { $0 } + refused.withLock { $0 }, 8)
        XCTAssertEqual(attempts.withLock { $0 }, 9, "a write ran again after losing a deadlock")
        XCTAssertEqual(try storage.read { try $0.pendingInvitationHouseholds(inviter: stranger, invitee: victim.id) }, [])
        XCTAssertTrue(try storage.read { try $0.isBlocked(account: victim.id, blocked: stranger) })
    }

    /// An owner's subscription upload and an App Store notification of the same purchase,
    /// at once, round after round: each takes the purchase's row before the household's, so
    /// they never wait for each other in a circle (a deadlock PostgreSQL finds only after
    /// deadlock_timeout, a second lost before one of them runs again). Every write's body
    /// runs once: no attempt was lost to a deadlock.
    func testUploadAndNotificationOfOnePurchaseNeverDeadlock() throws {
        let now = self.now, day = Self.day
        let (owner, h, _) = try household()
        let original = "3000000000000001"
        let first = Self.event(original, signedDate: now, key: "", expires: now + day)
        _ = try write { try $0.registerSubscription(household: h, owner: owner, upload: first, now: now) }
        let storage = self.pg!
        let rounds = 40
        let attempts = Mutex(0), outcomes = Mutex<[NotificationOutcome]>([]), failures = Mutex<[String]>([])
        for i in 1...rounds {
            // The notification is always newer than the upload: applied, it locks the household.
            let upload = Self.event(original, signedDate: now + Int64(2 * i) * 1000, key: "", expires: now + day)
            let renewed = Self.event(original, signedDate: now + Int64(2 * i + 1) * 1000, key: "renew-\(i)", expires: now + 2 * day,
                                     type: "DID_RENEW", status: 1)
            let notification = Self.notification(renewed)
            DispatchQueue.concurrentPerform(iterations: 2) { side in
                do {
                    if side == 0 {
                        _ = try storage.writeNow { w in
                            attempts.withLock { $0 += 1 }
                            return try w.registerSubscription(household: h, owner: owner, upload: upload, now: now)
                        }
                    } else {
                        let outcome = try storage.writeNow { w in
                            attempts.withLock { $0 += 1 }
                            return try w.recordNotification(notification, event: renewed, now: now)
                        }
                        outcomes.withLock { $0.append(outcome) }
                    }
                } catch { failures.withLock { $0.append("\(error)") } }
            }
        }
        XCTAssertEqual(failures.withLock { $0 }, [])
        XCTAssertEqual(outcomes.withLock { $0 }, Array(repeating: .applied, count: rounds))
        XCTAssertEqual(attempts.withLock { $0 }, 2 * rounds, "a write ran again after losing a deadlock")
        XCTAssertEqual(try storage.read { try $0.subscription(household: h) }?.purchase.event.key, "renew-\(rounds)")
    }

    // MARK: faults

    func testUnreachableDatabaseIsUnavailable() throws {
        let dead = PostgresLedgerStorage(url: "postgres://postgres@127.0.0.1:1/kidledger", connections: 1)
        XCTAssertThrowsError(try dead.read { try $0.head(household: UUID().lowercased) }) { e in
            XCTAssertEqual(e as? LedgerStorageError, .unavailable(commitOutcomeUnknown: false))
        }
        XCTAssertThrowsError(try dead.writeAndWait { try $0.nextSeq(household: UUID().lowercased) }) { e in
            XCTAssertEqual(e as? LedgerStorageError, .unavailable(commitOutcomeUnknown: false))
        }
    }
}
#endif
