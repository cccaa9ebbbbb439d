#if Postgres
import Foundation
import LedgerModel
import PostgresKit
import Synchronization
import XCTest
@testable import LedgerServer

/// Commits a storage reported.
private final class CommitLog: Sendable {
    let list = Mutex<[StorageCommit]>([])
}

/// `PostgresLedgerStorage` against the database named by KIDLEDGER_TEST_DATABASE_URL, each
/// test in a schema of its own (skipped when the variable is unset; CI always sets it).
final class PostgresLedgerStorageTests: XCTestCase {
    private var url = ""
    private var schema = ""
    private var storage: PostgresLedgerStorage!
    private let commits = CommitLog()

    override func setUpWithError() throws {
        guard let u = ProcessInfo.processInfo.environment["KIDLEDGER_TEST_DATABASE_URL"], !u.isEmpty else {
            throw XCTSkip("KIDLEDGER_TEST_DATABASE_URL is not set")
        }
        url = u
        schema = "ls_" + String(UUID().uuidString.lowercased().filter { $0 != "-" }.prefix(20))
        try PGConnection(url: url).execute("CREATE SCHEMA \(schema)")
        storage = makeStorage()
        XCTAssertEqual(try storage.migrate(), [1])
    }

    override func tearDown() {
        storage = nil
        if !schema.isEmpty, let admin = try? PGConnection(url: url) { try? admin.execute("DROP SCHEMA \(schema) CASCADE") }
    }

    private func makeStorage(connections: Int = 8) -> PostgresLedgerStorage {
        let commits = self.commits
        return PostgresLedgerStorage(url: url, connections: connections, setup: ["SET search_path TO \(schema)"]) { c in
            commits.list.withLock { $0.append(c) }
        }
    }

    private func write<T: Sendable>(_ body: @escaping @Sendable (any LedgerWriting) throws -> T) throws -> T {
        try storage.writeAndWait(body)
    }

    private func expect(_ expected: LedgerStorageError, file: StaticString = #filePath, line: UInt = #line,
                        _ body: @escaping @Sendable (any LedgerWriting) throws -> some Sendable) {
        XCTAssertThrowsError(try write(body), file: file, line: line) { e in
            XCTAssertEqual(e as? LedgerStorageError, expected, file: file, line: line)
        }
    }

    private let now: Int64 = 1_764_770_000_000

    /// An account (owner) with a household and one child.
    private func household() throws -> (owner: String, household: String, child: String) {
        let now = self.now
        let (owner, _) = try write { try $0.createAccount(handle: "o" + String(UUID().uuidString.prefix(8)).lowercased(),
                                                          displayName: "Owner", deviceName: "phone", now: now) }
        let h = UUID().lowercased, c = UUID().lowercased
        _ = try write { tx in
            _ = try tx.createHousehold(id: h, name: "Home", currency: "EUR", owner: owner.id, ifAbsentOnly: true, now: now)
            return try tx.createChild(household: h, account: owner.id, id: c, name: "Ada", sortOrder: nil, now: now).isCreated
        }
        return (owner.id, h, c)
    }

    private static func new(_ child: String, _ amount: Int64, id: String = UUID().lowercased, note: String = "") -> LedgerStore.NewTransaction {
        LedgerStore.NewTransaction(id: id, childId: child, amountCents: amount, note: note, source: .api, createdAt: nil, reversesId: nil,
                                   clientChosenId: true)
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
        XCTAssertEqual(results.withLock { $0 }.sorted { $0.count > $1.count }, [[1], [], []])
        XCTAssertEqual(try PGConnection(url: url, setup: ["SET search_path TO \(schema)"]).queryOne("SELECT count(*) FROM schema_version")?.int(0), 1)
    }

    // MARK: accounts and households

    func testAccountsTokensAndHouseholdIdentity() throws {
        let now = self.now
        let (a, token) = try write { try $0.createAccount(handle: "mum", displayName: "Mum", deviceName: "phone", now: now) }
        expect(.handleTaken("mum")) { try $0.createAccount(handle: "mum", displayName: "X", deviceName: "d", now: now) }
        let caller = try storage.read { try $0.caller(tokenHash: TokenSecret.sha256(token.secret)) }
        XCTAssertEqual(caller?.accountId, a.id)
        XCTAssertEqual(caller?.tokenId, token.record.id)
        XCTAssertEqual(try storage.read { try $0.account(id: a.id) }, a)

        let h = UUID().lowercased
        XCTAssertTrue(try write { try $0.createHousehold(id: h, name: "Home", currency: "EUR", owner: a.id, ifAbsentOnly: true, now: now) }.isCreated)
        expect(.householdIdTaken(h)) { try $0.createHousehold(id: h, name: "Home", currency: "EUR", owner: a.id, ifAbsentOnly: true, now: now) }
        XCTAssertFalse(try write { try $0.createHousehold(id: h, name: "Other", currency: "USD", owner: a.id, ifAbsentOnly: false, now: now) }.isCreated)
        let (b, _) = try write { try $0.createAccount(handle: "dad", displayName: "Dad", deviceName: "phone", now: now) }
        expect(.householdIdTaken(h)) { try $0.createHousehold(id: h, name: "Mine", currency: "EUR", owner: b.id, ifAbsentOnly: false, now: now) }
        expect(.householdNotFound) { try $0.household(id: h, account: b.id, need: .read) }

        let (record, m) = try storage.read { try $0.household(id: h, account: a.id, need: .read) }
        XCTAssertEqual(record.name, "Home")
        XCTAssertEqual(record.changeTag, LedgerStore.tag(1))
        XCTAssertEqual(record.createdAt, now)
        XCTAssertEqual(m.role, .owner)

        // If-Match refusal carries the current version; a match renames and moves the tag.
        expect(.preconditionFailed(currentTag: record.changeTag, current: record.json(m))) {
            try $0.updateHousehold(id: h, account: a.id, matches: { _ in false }, name: "New", currency: nil, now: now + 1)
        }
        let (renamed, _) = try write { try $0.updateHousehold(id: h, account: a.id, matches: { _ in true }, name: "New", currency: nil, now: now + 1) }
        XCTAssertEqual(renamed.name, "New")
        XCTAssertEqual(renamed.currency, "EUR")
        XCTAssertEqual(renamed.changeTag, LedgerStore.tag(2))

        XCTAssertFalse(try write { try $0.revokeToken(id: token.record.id, account: b.id, at: now) })
        XCTAssertTrue(try write { try $0.revokeToken(id: token.record.id, account: a.id, at: now) })
        XCTAssertNil(try storage.read { try $0.caller(tokenHash: TokenSecret.sha256(token.secret)) })
        XCTAssertTrue(commits.list.withLock { $0.contains { $0.revokedTokens == [token.record.id] } })
    }

    // MARK: children and transactions

    func testInsertIfAbsentReversalsUndoAndOverflow() throws {
        let now = self.now
        let (owner, h, c) = try household()
        let first = Self.new(c, 500, note: "pocket money")
        let saved = try write { try $0.addTransaction(household: h, author: owner, first, now: now) }
        XCTAssertTrue(saved.saved)
        XCTAssertEqual(saved.balanceCents, 500)
        let replay = try write { try $0.addTransaction(household: h, author: owner, first, now: now + 5) }
        XCTAssertFalse(replay.saved)
        XCTAssertEqual(replay.transaction, saved.transaction)
        XCTAssertEqual(replay.balanceCents, 500)
        var changed = first
        changed.amountCents = 501
        let different = changed
        expect(.transactionIdTaken(saved.transaction)) { try $0.addTransaction(household: h, author: owner, different, now: now) }

        // The id reserved for the reversal of `first` is refused for anything else.
        let reservedId = LedgerIDs.reversalID(of: LedgerIDs.parse(first.id)!).lowercased
        expect(.reversalIdReserved(reservedId, of: saved.transaction)) {
            try $0.addTransaction(household: h, author: owner, Self.new(c, 1, id: reservedId), now: now)
        }

        // Another household may use the same id for its own record.
        let (owner2, h2, c2) = try household()
        XCTAssertTrue(try write { try $0.addTransaction(household: h2, author: owner2, Self.new(c2, 7, id: first.id), now: now) }.saved)

        let rev = try write { try $0.reverse(household: h, author: owner, transaction: first.id, now: now) }
        XCTAssertTrue(rev.saved)
        XCTAssertEqual(rev.transaction.id, reservedId)
        XCTAssertEqual(rev.balanceCents, 0)
        let again = try write { try $0.reverse(household: h, author: owner, transaction: first.id, now: now) }
        XCTAssertFalse(again.saved)
        XCTAssertEqual(again.transaction.id, reservedId)
        expect(.notReversible) { try $0.reverse(household: h, author: owner, transaction: reservedId, now: now) }
        let target = try storage.read { try $0.transaction(household: h, id: first.id) }
        XCTAssertEqual(target?.reversedById, reservedId)
        expect(.transactionNotFound) { try $0.reverse(household: h, author: owner, transaction: UUID().lowercased, now: now) }

        // Undo-last: nothing left, then the newest undoable, guarded by `expected`.
        expect(.nothingToUndo) { try $0.undoLast(household: h, author: owner, child: c, expected: nil, now: now) }
        let t1 = try write { try $0.addTransaction(household: h, author: owner, Self.new(c, 100), now: now) }.transaction
        let t2 = try write { try $0.addTransaction(household: h, author: owner, Self.new(c, 200), now: now) }.transaction
        expect(.undoTargetChanged(current: t2)) { try $0.undoLast(household: h, author: owner, child: c, expected: t1.id, now: now) }
        let undone = try write { try $0.undoLast(household: h, author: owner, child: c, expected: t2.id, now: now) }
        XCTAssertEqual(undone.transaction.reversesId, t2.id)
        XCTAssertEqual(undone.balanceCents, 100)
        XCTAssertEqual(try write { try $0.undoLast(household: h, author: owner, child: c, expected: nil, now: now) }.transaction.reversesId, t1.id)
        expect(.childNotFound) { try $0.undoLast(household: h, author: owner, child: UUID().lowercased, expected: nil, now: now) }
        expect(.childNotFound) { try $0.addTransaction(household: h, author: owner, Self.new(UUID().lowercased, 1), now: now) }

        // Balance overflow leaves nothing behind.
        _ = try write { try $0.addTransaction(household: h, author: owner, Self.new(c, Int64.max), now: now) }
        expect(.balanceOverflow) { try $0.addTransaction(household: h, author: owner, Self.new(c, 1), now: now) }
        let child = try storage.read { try $0.child(household: h, id: c) }
        XCTAssertEqual(child?.balanceCents, Int64.max)
        let sum = try PGConnection(url: url, setup: ["SET search_path TO \(schema)"])
            .queryOne("SELECT sum(amount_cents)::text FROM transactions WHERE household_id = $1", [.uuid(h)])!.string(0)
        XCTAssertEqual(sum, String(Int64.max), "the cached balance equals the ledger's sum")

        // Paging newest first.
        let page1 = try storage.read { try $0.transactions(household: h, child: c, before: nil, limit: 3) }
        XCTAssertEqual(page1.items.count, 3)
        let page2 = try storage.read { try $0.transactions(household: h, child: c, before: page1.next, limit: 100) }
        XCTAssertNil(page2.next)
        XCTAssertEqual(page1.items.count + page2.items.count, 7)
        XCTAssertEqual(Set((page1.items + page2.items).map(\.id)).count, 7)
    }

    func testChildrenCreatePatchAndPush() throws {
        let now = self.now
        let (owner, h, c) = try household()
        let again = try write { try $0.createChild(household: h, account: owner, id: c, name: "Ada", sortOrder: nil, now: now) }
        XCTAssertFalse(again.isCreated)
        expect(.childIdTaken(c)) { try $0.createChild(household: h, account: owner, id: c, name: "Bob", sortOrder: nil, now: now) }
        let second = try write { try $0.createChild(household: h, account: owner, id: UUID().lowercased, name: "Bob", sortOrder: nil, now: now) }
        XCTAssertEqual(second.record.sortOrder, 1, "after the largest sort order")

        let patched = try write { try $0.updateChild(household: h, account: owner, id: c, matches: { _ in true }, name: "Ada L.",
                                                     sortOrder: nil, archived: true, now: now) }
        XCTAssertTrue(patched.archived)
        XCTAssertEqual(patched.modifiedAt, now + 1, "an edit never goes back in time")
        XCTAssertEqual(try storage.read { try $0.children(household: h, includeArchived: false) }.map(\.name), ["Bob"])
        XCTAssertEqual(try storage.read { try $0.children(household: h, includeArchived: true) }.map(\.name), ["Ada L.", "Bob"])

        var record = PushBatch.ChildRecord(id: c, name: "Ada P.", sortOrder: 0, archived: true, createdAt: now, modifiedAt: now + 9,
                                           modifiedBy: owner, baseChangeTag: "v0")
        let stale = record
        XCTAssertEqual(try write { try $0.pushChild(household: h, stale) }, .conflict(patched))
        record.baseChangeTag = patched.changeTag
        let pushed = record
        guard case .saved(let tag) = try write({ try $0.pushChild(household: h, pushed) }) else { return XCTFail("not saved") }
        XCTAssertEqual(try write { try $0.pushChild(household: h, pushed) }, .unchanged(changeTag: tag))
    }

    // MARK: sharing and access

    func testSharingInvitationsAndAccess() throws {
        let now = self.now
        let (owner, h, c) = try household()
        let (dad, _) = try write { try $0.createAccount(handle: "dad", displayName: "Dad", deviceName: "phone", now: now) }
        expect(.shareRequired) { try $0.invite(household: h, owner: owner, handle: "dad", permission: .readOnly, now: now) }
        XCTAssertTrue(try write { try $0.share(household: h, owner: owner) }.isCreated)
        XCTAssertFalse(try write { try $0.share(household: h, owner: owner) }.isCreated)
        expect(.unknownHandle("nobody")) { try $0.invite(household: h, owner: owner, handle: "nobody", permission: .readOnly, now: now) }
        let invited = try write { try $0.invite(household: h, owner: owner, handle: "dad", permission: .readOnly, now: now) }
        XCTAssertTrue(invited.isCreated)
        XCTAssertFalse(try write { try $0.invite(household: h, owner: owner, handle: "dad", permission: .readOnly, now: now) }.isCreated)
        // Invited is not yet a member.
        expect(.householdNotFound) { try $0.invite(household: h, owner: dad.id, handle: "dad", permission: .readOnly, now: now) }
        expect(.householdNotFound) { try $0.membership(household: h, account: dad.id, need: .read) }
        let pending = try storage.read { try $0.pendingInvitations(account: dad.id) }
        XCTAssertEqual(pending.map(\.householdId), [h])
        expect(.invitationNotFound) { try $0.acceptInvitation(pending[0].id, account: owner, now: now) }
        let (_, m) = try write { try $0.acceptInvitation(pending[0].id, account: dad.id, now: now) }
        XCTAssertEqual(m.permission, .readOnly)
        expect(.readOnly) { try $0.undoLast(household: h, author: dad.id, child: c, expected: nil, now: now) }
        expect(.ownerOnly) { try $0.invite(household: h, owner: dad.id, handle: "dad", permission: .readOnly, now: now) }
        _ = try write { try $0.setPermission(household: h, owner: owner, account: dad.id, permission: .readWrite, now: now) }
        XCTAssertTrue(try write { try $0.addTransaction(household: h, author: dad.id, Self.new(c, 1), now: now) }.saved)

        try write { try $0.removeParticipant(household: h, caller: owner, account: dad.id, now: now) }
        expect(.accessRevoked) { try $0.membership(household: h, account: dad.id, need: .read) }
        try write { try $0.unshare(household: h, owner: owner, now: now) }
        expect(.notShared) { try $0.unshare(household: h, owner: owner, now: now) }
    }

    // MARK: the feed

    func testFeedPagesTokensAndSyncStatus() throws {
        let now = self.now
        let (owner, h, c) = try household()
        for i in 0..<5 { _ = try write { try $0.addTransaction(household: h, author: owner, Self.new(c, Int64(i + 1)), now: now) } }
        let first = try storage.read { try $0.feedPage(household: h, account: owner, since: nil, limit: 4) }
        XCTAssertEqual(first.children.count + first.transactions.count, 4)
        XCTAssertTrue(first.moreComing)
        let rest = try storage.read { try $0.feedPage(household: h, account: owner, since: first.nextToken.encoded, limit: 100) }
        XCTAssertEqual(rest.records, 2)
        XCTAssertFalse(rest.moreComing)
        XCTAssertEqual(Set(first.transactions.map(\.id) + rest.transactions.map(\.id)).count, 5)
        let empty = try storage.read { try $0.feedPage(household: h, account: owner, since: rest.nextToken.encoded, limit: 100) }
        XCTAssertFalse(empty.hasNews)

        // A reversal's two changes are never split by a page boundary.
        let t = first.transactions[0]
        _ = try write { try $0.reverse(household: h, author: owner, transaction: t.id, now: now) }
        let one = try storage.read { try $0.feedPage(household: h, account: owner, since: rest.nextToken.encoded, limit: 1) }
        XCTAssertEqual(one.transactions.map(\.reversedById).first, .some(LedgerIDs.reversalID(of: LedgerIDs.parse(t.id)!).lowercased))

        let forged = SyncToken(household: h, incarnation: rest.nextToken.incarnation + 1, seq: 1).encoded
        XCTAssertThrowsError(try storage.read { try $0.feedPage(household: h, account: owner, since: forged, limit: 10) }) { e in
            XCTAssertEqual(e as? LedgerStorageError, .syncTokenExpired)
        }

        let (_, token) = try write { try $0.createAccount(handle: "ss", displayName: "S", deviceName: "d", now: now) }
        _ = token
        let ownerToken = try write { try $0.createToken(account: owner, deviceName: "tablet", now: now) }
        try write { try $0.recordPull(token: ownerToken.record.id, household: h, seq: rest.nextToken.seq, at: now) }
        let status = try storage.read { try $0.syncStatus(household: h, account: owner) }
        XCTAssertEqual(status.devices.map(\.tokenId), [ownerToken.record.id])
        XCTAssertEqual(status.devices.first?.changesBehind, 2, "the reversal and its target changed after the pull")
        XCTAssertEqual(status.devices.first?.lastPullAt, now)

        try write { try $0.deleteHousehold(id: h, account: owner) }
        XCTAssertThrowsError(try storage.read { try $0.feedPage(household: h, account: owner, since: nil, limit: 10) }) { e in
            XCTAssertEqual(e as? LedgerStorageError, .householdNotFound)
        }
        XCTAssertTrue(commits.list.withLock { $0.contains { $0.touched.contains(h) } })
    }

    // MARK: concurrency

    /// 16 writers into one household while a reader pages the feed with `since`: the reader
    /// ends with every acknowledged record exactly once, and the balance is the ledger's sum.
    func testSixteenConcurrentWritersAndAFeedReaderSeeEveryRecordOnce() throws {
        let now = self.now
        let (owner, h, c) = try household()
        storage = makeStorage(connections: 17)
        let perWriter = 25
        let acknowledged = Mutex<[String]>([])
        let writersDone = Mutex(0)
        let seen = Mutex<[String]>([])
        let storage = self.storage!
        let group = DispatchGroup()
        DispatchQueue.global().async(group: group) {
            var since: String?
            var finished = false
            while true {
                let done = writersDone.withLock { $0 } == 16
                do {
                    let page = try storage.read { try $0.feedPage(household: h, account: owner, since: since, limit: 7) }
                    seen.withLock { $0 += page.transactions.map(\.id) }
                    since = page.nextToken.encoded
                    if finished && !page.moreComing { break }
                    if done && !page.moreComing { finished = true }
                } catch {
                    XCTFail("reader: \(error)"); break
                }
            }
        }
        DispatchQueue.concurrentPerform(iterations: 16) { w in
            for i in 0..<perWriter {
                let t = LedgerStore.NewTransaction(id: UUID().lowercased, childId: c, amountCents: Int64(w * 100 + i), note: "",
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

    /// Identical requests racing: one is saved, the others see it and answer unchanged;
    /// identical household PUTs racing on a fresh id: one creates, the others find it.
    func testConcurrentIdenticalWritesAreIdempotent() throws {
        let now = self.now
        let (owner, h, c) = try household()
        storage = makeStorage(connections: 8)
        let storage = self.storage!
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
