import Foundation
import LedgerModel
import SQLiteKit
import Synchronization
import XCTest
@testable import LedgerCore
@testable import LedgerStorageSQLite

/// The writer holds a household's seq and a child's balance back until COMMIT: within one
/// group commit every statement still sees them as written, a job that fails after
/// changing them leaves nothing behind, and the committed rows are what writing them one
/// by one would have left.
final class WriterRowStateTests: XCTestCase {
    private struct Refused: Error {}
    private var directory: URL!
    private var path: String { directory.appendingPathComponent("db.sqlite").path }
    private let now: Int64 = 1_764_770_000_000

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-deferred-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        try? FileManager.default.removeItem(at: directory)
    }

    /// Results of asynchronous writes, by position.
    private final class Results: @unchecked Sendable {
        private let lock = NSLock()
        private var values: [Int: Result<Int64, Error>] = [:]
        let group = DispatchGroup()
        func set(_ i: Int, _ r: Result<Int64, Error>) { lock.lock(); values[i] = r; lock.unlock(); group.leave() }
        func get(_ i: Int) -> Result<Int64, Error>? { lock.lock(); defer { lock.unlock() }; return values[i] }
    }

    /// Jobs per commit, as the writer reports them.
    private final class CommitLog: Sendable {
        let jobs = Mutex<[Int]>([])
    }

    /// A writer with its row state, an owner's household with `children` children, the
    /// household's seq, and the writer held by a job until `gate` is signalled, so that
    /// everything submitted meanwhile runs as one batch. `commits`: jobs per commit after
    /// the setup's.
    private struct HeldBatch {
        let writer: WriteQueue
        let storage: SQLiteLedgerStorage
        let commits: CommitLog
        let owner: String
        let household: String
        let children: [String]
        let seqBefore: Int64
        let gate: DispatchSemaphore
    }

    private func holdBatch(children count: Int) throws -> HeldBatch {
        let db = try SQLiteConnection(path: path)
        try Migrator.migrate(db, Schema.migrations)
        let keys = try TransactionKeys.load(db)
        let commits = CommitLog()
        let writer = WriteQueue(connection: db, batchState: WriterRowState()) { c in commits.jobs.withLock { $0.append(c.writes) } }
        let storage = SQLiteLedgerStorage(reads: ReadPool(path: path), writer: writer, keys: keys)
        let now = self.now
        let (owner, _) = try storage.writeAndWait { try $0.createAccount(handle: "ann", displayName: "Ann", deviceName: "phone", now: now) }
        let h = UUID().lowercased, children = (0..<count).map { _ in UUID().lowercased }
        _ = try storage.writeAndWait { tx in
            _ = try tx.createHousehold(id: h, name: "Home", currency: "EUR", owner: owner.id, ifAbsentOnly: true, now: now)
            for (i, c) in children.enumerated() {
                _ = try tx.createChild(household: h, account: owner.id, id: c, name: "Kid \(i)", sortOrder: nil, now: now)
            }
        }
        let seqBefore = try XCTUnwrap(db.queryOne("SELECT seq FROM households WHERE id = ?", [.text(h)])).int(0)
        commits.jobs.withLock { $0.removeAll() }
        let gate = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0)
        writer.submit(WriteQueue.Job(work: { _ in started.signal(); gate.wait(); return StorageCommit() },
                                     completion: { _ in }))
        started.wait()   // the gate's batch is taken: what follows queues behind it
        return HeldBatch(writer: writer, storage: storage, commits: commits, owner: owner.id, household: h,
                         children: children, seqBefore: seqBefore, gate: gate)
    }

    func testOneBatchReadsWhatItWroteAndCommitsTheSums() throws {
        // Everything below waits behind a gate, so that it runs as one batch.
        let held = try holdBatch(children: 2)
        defer { held.writer.stop() }
        let (writer, storage, gate) = (held.writer, held.storage, held.gate)
        let (h, c, d, seqBefore, now) = (held.household, held.children[0], held.children[1], held.seqBefore, self.now)
        let owner = held.owner
        let results = Results()
        var expected: [Int: Int64] = [:]   // position → balance of c it must answer
        var balance: Int64 = 0
        for i in 0..<24 {
            results.group.enter()
            switch i {
            case 5, 17:
                // Another statement of a later job reads the child through SQL.
                storage.write({ tx in try XCTUnwrap(tx.child(household: h, id: c)).balanceCents }) { results.set(i, $0) }
                expected[i] = balance
            case 9:
                // A job that knows nothing of held-back rows reads them as written.
                writer.submit(WriteQueue.Job.returning({ db in
                    let cents = try XCTUnwrap(db.queryOne("SELECT balance_cents FROM children WHERE id = ?", [.text(c)])).int(0)
                    return (cents, StorageCommit())
                }, completion: { results.set(i, $0) }))
                expected[i] = balance
            case 12:
                // Changes the held-back rows, then fails: nothing of it may stay.
                storage.write({ tx -> Int64 in
                    _ = try tx.nextSeq(household: h)
                    try tx.setBalance(household: h, child: c, cents: 1_000_000)
                    throw LedgerStorageError.childNotFound
                }) { results.set(i, $0) }
            case 20:
                // Another child of the same household, in between.
                storage.write({ tx in
                    try tx.addTransaction(household: h, author: owner, LedgerStorageContractTests.new(d, 3), now: now).balanceCents
                }) { results.set(i, $0) }
            default:
                let amount = Int64(i + 1) * 10
                balance += amount
                storage.write({ tx in
                    try tx.addTransaction(household: h, author: owner, LedgerStorageContractTests.new(c, amount), now: now).balanceCents
                }) { results.set(i, $0) }
                expected[i] = balance
            }
        }
        gate.signal()
        XCTAssertEqual(results.group.wait(timeout: .now() + 30), .success)

        for i in 0..<24 {
            switch (i, results.get(i)) {
            case (12, .failure(let e)?): XCTAssertEqual(e as? LedgerStorageError, .childNotFound)
            case (20, .success(let cents)?): XCTAssertEqual(cents, 3)
            case (_, .success(let cents)?): XCTAssertEqual(cents, expected[i], "job \(i)")
            default: XCTFail("job \(i): \(String(describing: results.get(i)))")
            }
        }
        // The gate's batch, then all 24 in one (the refused one not counted).
        XCTAssertEqual(held.commits.jobs.withLock { $0 }, [1, 23])

        let reader = try SQLiteConnection(path: path, mode: .readOnly)
        XCTAssertEqual(try reader.queryOne("SELECT balance_cents FROM children WHERE id = ?", [.text(c)])?.int(0), balance)
        XCTAssertEqual(try reader.queryOne("SELECT balance_cents FROM children WHERE id = ?", [.text(d)])?.int(0), 3)
        XCTAssertEqual(try reader.queryOne("SELECT SUM(amount_cents) FROM transactions WHERE child_id = ?", [.text(c)])?.int(0), balance)
        // 20 transactions with consecutive seqs after the household's, and the household's seq is the last.
        let seqs = try reader.query("SELECT seq FROM transactions WHERE household_key = (SELECT ledger_key FROM households WHERE id = ?) ORDER BY seq", [.text(h)]).map { $0.int(0) }
        XCTAssertEqual(seqs, Array((seqBefore + 1)...(seqBefore + 20)))
        XCTAssertEqual(try reader.queryOne("SELECT seq FROM households WHERE id = ?", [.text(h)])?.int(0), seqBefore + 20)

        // The next batch goes on from there.
        let next = try storage.writeAndWait { try $0.addTransaction(household: h, author: owner, LedgerStorageContractTests.new(c, 1), now: now) }
        XCTAssertEqual(next.balanceCents, balance + 1)
        XCTAssertEqual(try reader.queryOne("SELECT seq FROM transactions WHERE id = ?", [.text(next.transaction.id)])?.int(0), seqBefore + 21)
        XCTAssertEqual(try reader.queryOne("SELECT seq FROM households WHERE id = ?", [.text(h)])?.int(0), seqBefore + 21)
    }

    /// Once a batch holds a household's seq, a new transaction is inserted without a
    /// lookup first (`insertTransactionIfAbsent`). A replay, a taken id, a missing child and
    /// a balance out of range still get the answers the lookup gave, nothing of them is
    /// written, and the seqs of what was written follow one another.
    func testInsertsBeforeTheLookupAnswerAsTheLookupDid() throws {
        let held = try holdBatch(children: 1)
        defer { held.writer.stop() }
        let (storage, gate) = (held.storage, held.gate)
        let (h, c, seqBefore, now) = (held.household, held.children[0], held.seqBefore, self.now)
        let owner = held.owner
        let x = UUID().lowercased, y = UUID().lowercased, w = UUID().lowercased
        let jobs: [(id: String, child: String, amount: Int64)] = [
            (x, c, 100),                 // the batch's first write to the household: looked up first
            (y, c, 50),                  // inserted before any lookup
            (y, c, 50),                  // a replay
            (y, c, 51),                  // the id taken by another record
            (UUID().lowercased, UUID().lowercased, 1),   // no such child
            (UUID().lowercased, c, .max),                // the balance out of range
            (w, c, 1),
        ]
        let outcomes = Mutex<[Int: (fast: Bool, result: Result<TransactionWrite, Error>)]>([:])
        let group = DispatchGroup()
        for (i, job) in jobs.enumerated() {
            group.enter()
            let fast = Mutex(false)
            storage.write({ tx -> TransactionWrite in
                fast.withLock { $0 = tx.insertsBeforeLookup(household: h) }
                return try tx.addTransaction(household: h, author: owner,
                                             LedgerStorageContractTests.new(job.child, job.amount, id: job.id), now: now,
                                             checkingAccess: .write)
            }) { r in
                outcomes.withLock { $0[i] = (fast.withLock { $0 }, r) }
                group.leave()
            }
        }
        gate.signal()
        XCTAssertEqual(group.wait(timeout: .now() + 30), .success)
        let got = outcomes.withLock { $0 }
        XCTAssertEqual(got.keys.sorted(), Array(0..<jobs.count))
        XCTAssertEqual((0..<jobs.count).map { got[$0]!.fast }, [false] + Array(repeating: true, count: jobs.count - 1))
        func write(_ i: Int) throws -> TransactionWrite { try got[i]!.result.get() }
        func failure(_ i: Int) -> LedgerStorageError? {
            if case .failure(let e) = got[i]!.result { return e as? LedgerStorageError }
            return nil
        }
        XCTAssertEqual(try write(0).balanceCents, 100)
        XCTAssertTrue(try write(0).saved)
        XCTAssertEqual(try write(1).balanceCents, 150)
        XCTAssertTrue(try write(1).saved)
        XCTAssertFalse(try write(2).saved)
        XCTAssertEqual(try write(2).balanceCents, 150)
        XCTAssertEqual(try write(2).transaction, try write(1).transaction)
        XCTAssertEqual(failure(3), .transactionIdTaken(try write(1).transaction))
        XCTAssertEqual(failure(4), .childNotFound)
        XCTAssertEqual(failure(5), .balanceOverflow)
        XCTAssertEqual(try write(6).balanceCents, 151)
        // The gate's batch, then the seven in one (the three refused not counted).
        XCTAssertEqual(held.commits.jobs.withLock { $0 }, [1, 4])

        let reader = try SQLiteConnection(path: path, mode: .readOnly)
        let rows = try reader.query("SELECT id, seq FROM transactions WHERE household_key = (SELECT ledger_key FROM households WHERE id = ?) ORDER BY seq", [.text(h)])
        XCTAssertEqual(rows.map { $0.string(0) }, [x, y, w])
        XCTAssertEqual(rows.map { $0.int(1) }, [seqBefore + 1, seqBefore + 2, seqBefore + 3])
        XCTAssertEqual(try reader.queryOne("SELECT seq FROM households WHERE id = ?", [.text(h)])?.int(0), seqBefore + 3)
        XCTAssertEqual(try reader.queryOne("SELECT balance_cents FROM children WHERE id = ?", [.text(c)])?.int(0), 151)
        XCTAssertEqual(try reader.queryOne("SELECT SUM(amount_cents) FROM transactions WHERE child_id = ?", [.text(c)])?.int(0), 151)
    }

    /// A new transaction names its household by the ledger key kept with the access record;
    /// a household deleted and created again in the same batch has a new key, and the
    /// writes after it use that one.
    func testAKeptLedgerKeyNeverOutlivesItsHousehold() throws {
        let held = try holdBatch(children: 1)
        defer { held.writer.stop() }
        let (storage, h, c, owner, now) = (held.storage, held.household, held.children[0], held.owner, self.now)
        let other = UUID().lowercased
        let ids = (0..<4).map { _ in UUID().lowercased }
        let results = Results()
        func post(_ i: Int) {
            results.group.enter()
            storage.write({ tx in
                try tx.addTransaction(household: h, author: owner, LedgerStorageContractTests.new(c, 10, id: ids[i]), now: now,
                                      checkingAccess: .write).balanceCents
            }) { results.set(i, $0) }
        }
        post(0)
        post(1)
        results.group.enter()
        storage.write({ tx -> Int64 in
            try tx.deleteHousehold(id: h, account: owner)
            _ = try tx.createHousehold(id: other, name: "Other", currency: "EUR", owner: owner, ifAbsentOnly: true, now: now)
            _ = try tx.createHousehold(id: h, name: "Again", currency: "EUR", owner: owner, ifAbsentOnly: true, now: now)
            _ = try tx.createChild(household: h, account: owner, id: c, name: "Kid", sortOrder: nil, now: now)
            return 0
        }) { results.set(9, $0) }
        post(2)
        post(3)
        held.gate.signal()
        XCTAssertEqual(results.group.wait(timeout: .now() + 30), .success)
        XCTAssertEqual([0, 1, 9, 2, 3].map { i in (try? results.get(i)?.get()) ?? -1 }, [10, 20, 0, 10, 20])
        XCTAssertEqual(held.commits.jobs.withLock { $0 }, [1, 5], "one batch")

        let reader = try SQLiteConnection(path: path, mode: .readOnly)
        let keys = try reader.query("SELECT id, ledger_key FROM households").reduce(into: [String: Int64]()) { $0[$1.string(0)] = $1.int(1) }
        XCTAssertEqual(Set(keys.values).count, 2)
        XCTAssertEqual(try reader.query("SELECT id, household_key FROM transactions ORDER BY n").map { [$0.string(0), String($0.int(1))] },
                       [[ids[2], String(keys[h]!)], [ids[3], String(keys[h]!)]])
        XCTAssertEqual(try storage.read { try $0.transactions(household: h, child: c, before: nil, limit: 10) }.items.map(\.id),
                       [ids[3], ids[2]])
    }

    /// A batch that fails as a whole (here: at COMMIT's flush, the household row gone under
    /// it) forgets what it held back: the next batch starts from the database.
    func testAFailedBatchForgetsWhatItHeldBack() throws {
        let db = try SQLiteConnection(path: path)
        try Migrator.migrate(db, Schema.migrations)
        let deferred = WriterRowState()
        deferred.setBalance(household: "h", child: "c", cents: 5)
        XCTAssertEqual(deferred.balance(household: "h", child: "c"), 5)
        deferred.discard()
        XCTAssertNil(deferred.balance(household: "h", child: "c"))
        deferred.seqWritten(household: "h", seq: 7)
        XCTAssertEqual(deferred.advanceSeq(household: "h"), 8)
        deferred.discard()
        XCTAssertNil(deferred.advanceSeq(household: "h"))
        // Written out: both rows in one go, nothing left held.
        try db.execute("""
            INSERT INTO accounts VALUES ('a', 'ann', 'Ann', 1);
            INSERT INTO households (id, name, currency, owner_account_id, created_at, modified_at, change_tag, incarnation, seq)
                VALUES ('h', 'Home', 'EUR', 'a', 1, 1, 'v1', 1, 7);
            INSERT INTO children (id, household_id, name, sort_order, created_at, modified_at, modified_by, change_tag, balance_cents, seq)
                VALUES ('c', 'h', 'Kid', 0, 1, 1, 'a', 'v1', 0, 1);
            """)
        deferred.seqWritten(household: "h", seq: 7)
        XCTAssertEqual(deferred.advanceSeq(household: "h"), 8)
        XCTAssertEqual(deferred.advanceSeq(household: "h"), 9)
        deferred.setBalance(household: "h", child: "c", cents: 42)
        try deferred.flush(db, beforeOtherStatements: false)
        XCTAssertEqual(try db.queryOne("SELECT seq FROM households WHERE id = 'h'")?.int(0), 9)
        XCTAssertEqual(try db.queryOne("SELECT balance_cents FROM children WHERE id = 'c'")?.int(0), 42)
        XCTAssertNil(deferred.balance(household: "h", child: "c"))
        XCTAssertNil(deferred.advanceSeq(household: "h"))
    }

    /// A parent's access is read once while only POSTs run; a change to it — in the same
    /// batch through any other statement, in a later batch, or by another connection to
    /// the file — is seen by the next write.
    func testAKeptAccessRecordNeverOutlivesAChange() throws {
        let (_, writer, storage) = try openSQLiteStorage(path)
        defer { writer.stop() }
        let now = self.now
        let (owner, _) = try storage.writeAndWait { try $0.createAccount(handle: "ann", displayName: "Ann", deviceName: "a", now: now) }
        let (parent, _) = try storage.writeAndWait { try $0.createAccount(handle: "bob", displayName: "Bob", deviceName: "b", now: now) }
        let h = UUID().lowercased, c = UUID().lowercased
        _ = try storage.writeAndWait { tx in
            _ = try tx.createHousehold(id: h, name: "Home", currency: "EUR", owner: owner.id, ifAbsentOnly: true, now: now)
            return try tx.createChild(household: h, account: owner.id, id: c, name: "Ada", sortOrder: nil, now: now).isCreated
        }
        try writer.sync { db in
            try db.run("""
                INSERT INTO participants (household_id, account_id, permission, status, invitation_id, invited_at, updated_at, accepted_at)
                VALUES (?, ?, 'readWrite', 'accepted', 'inv1', 1, 1, 1)
                """, [.text(h), .text(parent.id)])
        }
        let post: @Sendable (any LedgerWriting) throws -> TransactionWrite = { tx in
            try tx.addTransaction(household: h, author: parent.id, LedgerStorageContractTests.new(c, 1), now: now, checkingAccess: .write)
        }
        func expectRefused(_ why: String, line: UInt = #line) {
            XCTAssertThrowsError(try storage.writeAndWait(post), why, line: line) { e in
                XCTAssertEqual(e as? LedgerStorageError, .accessRevoked, why, line: line)
            }
        }
        let setStatus = { (status: String) in
            { (db: SQLiteConnection) throws -> Void in
                try db.run("UPDATE participants SET status = ? WHERE account_id = ?", [.text(status), .text(parent.id)])
            }
        }

        // Later batches: writes by the parent, its access revoked through the writer, refused.
        XCTAssertTrue(try storage.writeAndWait(post).saved)
        XCTAssertTrue(try storage.writeAndWait(post).saved)
        try writer.sync(setStatus("revoked"))
        expectRefused("revoked in an earlier batch")
        try writer.sync(setStatus("accepted"))
        XCTAssertTrue(try storage.writeAndWait(post).saved)

        // By another connection (an admin command on the same file).
        let other = try SQLiteConnection(path: path)
        try setStatus("revoked")(other)
        expectRefused("revoked by another connection")
        try setStatus("accepted")(other)
        XCTAssertTrue(try storage.writeAndWait(post).saved)

        // In one batch: a POST, a job changing the access through the storage's own
        // statements, a POST.
        let gate = DispatchSemaphore(value: 0), started = DispatchSemaphore(value: 0)
        writer.submit(WriteQueue.Job(work: { _ in started.signal(); gate.wait(); return StorageCommit() },
                                     completion: { _ in }))
        started.wait()
        let results = Results()
        results.group.enter()
        storage.write({ tx in try post(tx).balanceCents }) { results.set(0, $0) }
        results.group.enter()
        storage.write({ tx -> Int64 in
            try (tx as! SQLiteLedgerTransaction).db.run("UPDATE participants SET status = 'revoked' WHERE account_id = ?",
                                                        [.text(parent.id)])
            return 0
        }) { results.set(1, $0) }
        results.group.enter()
        storage.write({ tx in try post(tx).balanceCents }) { results.set(2, $0) }
        gate.signal()
        XCTAssertEqual(results.group.wait(timeout: .now() + 30), .success)
        if case .success(let cents)? = results.get(0) { XCTAssertEqual(cents, 5) } else { XCTFail("\(String(describing: results.get(0)))") }
        guard case .failure(let e)? = results.get(2) else { return XCTFail("the POST after the revocation was saved") }
        XCTAssertEqual(e as? LedgerStorageError, .accessRevoked)
    }
}
