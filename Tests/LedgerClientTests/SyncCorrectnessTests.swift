import Foundation
@testable import LedgerClient
import LedgerClientTesting
import LedgerModel
import SQLiteKit
import XCTest

/// Hands a value to a transport closure; the tests call it on one thread at a time.
final class Unchecked<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}

/// Collects what an engine reports through `onEvent`.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [SyncEvent] = []
    func append(_ e: SyncEvent) { lock.lock(); items.append(e); lock.unlock() }
    var events: [SyncEvent] { lock.lock(); defer { lock.unlock() }; return items }
}

/// Store failures, unmergeable pages, two engines on one file, rejected changes and the share
/// upload: what the sync engine must never get wrong silently.
final class SyncCorrectnessTests: XCTestCase {
    private var files: [String] = []

    override func tearDown() {
        for f in files { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: f + suffix) } }
    }

    private func tempStorePath() -> String {
        let path = NSTemporaryDirectory() + "kl-core-\(UUID().uuidString).sqlite"
        files.append(path)
        return path
    }

    private func makePair() throws -> (FakeLedgerServer, Device, Device, ChildRecord) { try SyncEngineTests.makePair() }

    /// An engine for `store` whose requests go through `hook` before (or instead of) the server.
    private func engine(_ store: LedgerStore, _ server: FakeLedgerServer,
                        hook: @escaping @Sendable (TransportRequest, FakeLedgerServer) throws -> TransportResponse) -> SyncEngine {
        SyncEngine(store: store, transport: InMemoryTransport { try hook($0, server) }, retry: RetryPolicy(maxAttempts: 2, sleep: { _ in }))
    }

    // MARK: 1. Store failures

    func testLocalStoreFailureIsNotAServerErrorAndLeavesTheStatus() throws {
        let (_, mom, dad, ann) = try makePair()
        try mom.service.addMoney(childId: ann.id, cents: 1)
        mom.faults.faults.offline = true
        XCTAssertThrowsError(try mom.engine.sync())
        mom.faults.faults.offline = false
        XCTAssertEqual(try mom.service.status(), .offline(pending: 1))
        let lastSync = try mom.store.string(.lastSyncAt)
        // Dad's change makes Mom's pull insert a row, which the device's database refuses.
        try dad.service.addMoney(childId: ann.id, cents: 2)
        try dad.engine.sync()
        try mom.store.db.execute("CREATE TEMP TRIGGER refuse BEFORE INSERT ON main.transactions BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END")
        XCTAssertThrowsError(try mom.engine.sync()) { error in
            XCTAssertTrue(error is StoreFailure, "a local failure is reported as such, not as \(error)")
            XCTAssertTrue((error as? StoreFailure)?.underlying is SQLiteError)
        }
        XCTAssertEqual(try mom.store.string(.lastOutcome), "offline", "the status is not cleared")
        XCTAssertEqual(try mom.store.string(.lastSyncAt), lastSync, "no sync is claimed")
        try mom.store.db.execute("DROP TRIGGER temp.refuse")
        try mom.engine.sync()
        XCTAssertEqual(try mom.balances(), [ann.id: 1003])
        XCTAssertEqual(try mom.service.status(), .synced)
    }

    func testBusyDatabaseIsAStoreFailure() throws {
        let server = FakeLedgerServer()
        let path = tempStorePath()
        let app = try LedgerStore(path: path, busyTimeoutMs: 50)
        let other = try LedgerStore(path: path)
        let engine = SyncEngine(store: app, transport: server.transport, retry: RetryPolicy(maxAttempts: 1, sleep: { _ in }))
        try engine.signUpForTests(handle: "mom", displayName: "Mom")
        let ann = try LedgerService(store: app).addChild(name: "Ann")
        try ShareFlow(engine: engine).enable(name: "Smiths")
        try LedgerService(store: app).addMoney(childId: ann.id, cents: 5)
        // Another process holds the write lock past this connection's busy timeout.
        try other.db.execute("BEGIN IMMEDIATE")
        XCTAssertThrowsError(try engine.sync()) { error in
            guard let failure = error as? StoreFailure else { return XCTFail("\(error)") }
            XCTAssertTrue((failure.underlying as? SQLiteError)?.isBusy == true)
        }
        try other.db.execute("ROLLBACK")
        XCTAssertEqual(try app.pendingCount(), 1, "nothing was lost")
        try engine.sync()
        XCTAssertEqual(try app.pendingCount(), 0)
        XCTAssertEqual(server.balances(try app.household().id), [ann.id: 5])
    }

    // MARK: 2. Pages that cannot be merged

    /// Rewrites the `createdAt` of the transaction `id` in every feed page to something unreadable.
    private static func corrupting(_ id: String) -> @Sendable (TransportRequest, FakeLedgerServer) throws -> TransportResponse {
        { req, server in
            var response = try server.handle(req)
            if req.method == "GET", req.path.contains("/changes") {
                var page = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
                page["transactions"] = (page["transactions"] as? [[String: Any]] ?? []).map { t in
                    var t = t
                    if (t["id"] as? String)?.lowercased() == id { t["createdAt"] = "yesterday" }
                    return t
                }
                response.body = Array(try JSONSerialization.data(withJSONObject: page))
            }
            return response
        }
    }

    func testUnmergeableRecordIsSetAsideReportedAndLaterPagesStillArrive() throws {
        let (server, mom, dad, ann) = try makePair()
        let bad = try dad.service.addMoney(childId: ann.id, cents: 7)
        try dad.engine.sync()
        let log = EventLog()
        let engine = engine(mom.store, server, hook: Self.corrupting(bad.id))
        engine.onEvent = { log.append($0) }
        try engine.sync()
        XCTAssertEqual(try mom.store.unmergedChanges().map(\.id), [bad.id])
        XCTAssertEqual(try mom.store.unmergedChanges().first?.kind, "transaction")
        XCTAssertTrue(log.events.contains { if case .unmerged(1, _) = $0 { return true }; return false }, "\(log.events)")
        // Later changes are not stalled behind it.
        try dad.service.addMoney(childId: ann.id, cents: 20)
        try dad.engine.sync()
        try engine.sync()
        XCTAssertEqual(try mom.balances(), [ann.id: 1020])
        XCTAssertTrue(log.events.contains(.remoteChanges(children: 0, transactions: 1)), "\(log.events)")
        try mom.store.clearUnmerged()
        XCTAssertEqual(try mom.store.unmergedCount(), 0)
    }

    func testUnreadablePageIsReportedEveryTimeAndClearedOnRecovery() throws {
        let (server, mom, dad, ann) = try makePair()
        try dad.service.addMoney(childId: ann.id, cents: 3)
        try dad.engine.sync()
        let broken = Locked(true)
        let log = EventLog()
        let engine = engine(mom.store, server) { req, server in
            if req.method == "GET", req.path.contains("/changes"), broken.withLock({ $0 }) {
                return TransportResponse(status: 200, body: Array("{\"children\": [".utf8))
            }
            return try server.handle(req)
        }
        engine.onEvent = { log.append($0) }
        for _ in 0..<2 {
            XCTAssertThrowsError(try engine.sync()) { XCTAssertEqual(($0 as? ClientError).map { if case .server = $0 { true } else { false } }, true, "\($0)") }
        }
        XCTAssertEqual(try mom.store.unmergedChanges().map(\.kind), ["page"], "the stalled page is kept visible")
        XCTAssertEqual(log.events.filter { if case .unmerged = $0 { return true }; return false }.count, 1, "reported once, not per retry")
        broken.withLock { $0 = false }
        try engine.sync()
        XCTAssertEqual(try mom.store.unmergedCount(), 0)
        XCTAssertEqual(try mom.balances(), [ann.id: 1003])
    }

    // MARK: 3. Two engines on one store file

    func testTwoEnginesOnOneFileNeverRewindTheSyncToken() throws {
        let server = FakeLedgerServer()
        let path = tempStorePath()
        let appStore = try LedgerStore(path: path)
        let extStore = try LedgerStore(path: path)
        let extension_ = SyncEngine(store: extStore, transport: server.transport, retry: RetryPolicy(maxAttempts: 1, sleep: { _ in }))
        let dad = try Device(server: server, seed: 3)
        let shared = Unchecked((dad: dad, ext: extension_))
        let interleave = Locked(false)
        let extensionToken = Locked<String?>(nil)
        let app = engine(appStore, server) { req, server in
            let response = try server.handle(req)
            if req.method == "GET", req.path.contains("/changes"), interleave.withLock({ let v = $0; $0 = false; return v }) {
                // While this page is in flight: Dad renames Ann and adds money, and the
                // extension (the same ledger, another process) pulls all of it.
                let (dad, ext) = shared.value
                let ann = try dad.service.children()[0].child
                try dad.service.renameChild(id: ann.id, to: "Annie")
                try dad.service.addMoney(childId: ann.id, cents: 40)
                try dad.engine.sync()
                try ext.sync()
                extensionToken.withLock { $0 = try? ext.store.string(.syncToken) }
            }
            return response
        }
        try app.signUpForTests(handle: "mom", displayName: "Mom")
        let ann = try LedgerService(store: appStore).addChild(name: "Ann")
        try LedgerService(store: appStore).addMoney(childId: ann.id, cents: 100)
        try ShareFlow(engine: app).enable(name: "Smiths")
        try dad.signup("dad")
        let invite = try ShareFlow(engine: app).invite(handle: "dad", readOnly: false)
        _ = try JoinFlow(engine: dad.engine).join(invitationId: try XCTUnwrap(invite.invitationId), replaceLocal: false)

        // A change the app's next page carries: an older version of Ann than the one to come.
        try dad.service.renameChild(id: ann.id, to: "Ann v1")
        try dad.engine.sync()
        interleave.withLock { $0 = true }
        try app.sync()
        XCTAssertNotNil(extensionToken.withLock { $0 })
        XCTAssertEqual(try appStore.string(.syncToken), extensionToken.withLock { $0 }, "the token is never rewound")
        XCTAssertEqual(try appStore.child(id: ann.id)?.name, "Annie", "an older page never overwrites a newer child")
        XCTAssertEqual(try appStore.balance(childId: ann.id), 140)
        try dad.service.addMoney(childId: ann.id, cents: 1)
        try dad.engine.sync()
        try app.sync()
        XCTAssertEqual(try appStore.balance(childId: ann.id), 141)
    }

    func testTwoEnginesOnOneFileKeepTheNewestChangeTagAndQueue() throws {
        let server = FakeLedgerServer()
        let path = tempStorePath()
        let appStore = try LedgerStore(path: path)
        let extStore = try LedgerStore(path: path)
        let extension_ = SyncEngine(store: extStore, transport: server.transport, retry: RetryPolicy(maxAttempts: 1, sleep: { _ in }))
        let shared = Unchecked((store: extStore, engine: extension_))
        let interleave = Locked(false)
        let app = engine(appStore, server) { req, server in
            let response = try server.handle(req)
            if req.method == "POST", req.path.hasSuffix("/changes"), interleave.withLock({ let v = $0; $0 = false; return v }) {
                // The push reached the server; before its answer is applied, the extension
                // renames Ann again, adds money and syncs both.
                let (extStore, ext) = shared.value
                let ann = try extStore.children()[0]
                try LedgerService(store: extStore, now: { Timestamp.nowMs() + 1_000 }).renameChild(id: ann.id, to: "Anna")
                try LedgerService(store: extStore).addMoney(childId: ann.id, cents: 5)
                try ext.sync()
            }
            return response
        }
        try app.signUpForTests(handle: "mom", displayName: "Mom")
        let ann = try LedgerService(store: appStore).addChild(name: "Ann")
        try ShareFlow(engine: app).enable(name: "Smiths")
        try LedgerService(store: appStore).renameChild(id: ann.id, to: "Annie")
        try LedgerService(store: appStore).addMoney(childId: ann.id, cents: 10)
        interleave.withLock { $0 = true }
        try app.sync()
        let hh = try appStore.household().id
        let serverTag = server.state.withLock { $0.households[hh]!.children[ann.id]!.0.changeTag }
        XCTAssertEqual(try appStore.child(id: ann.id)?.changeTag, serverTag, "an older answer never overwrites a newer tag")
        XCTAssertEqual(try appStore.child(id: ann.id)?.name, "Anna")
        XCTAssertEqual(try appStore.pendingCount(), 0)
        XCTAssertEqual(server.balances(hh), [ann.id: 15], "each transaction reached the server once")
        XCTAssertEqual(try appStore.balance(childId: ann.id), 15)
        // The next edit pushes on the right base: saved at once, no conflict round.
        try LedgerService(store: appStore, now: { Timestamp.nowMs() + 2_000 }).renameChild(id: ann.id, to: "Ann")
        XCTAssertEqual(try app.sync().conflicts, 0)
    }

    // MARK: 4. Rejected changes

    func testRejectedTransactionIsKeptListedAndDismissable() throws {
        let (server, mom, dad, ann) = try makePair()
        let log = EventLog()
        let refusing = engine(mom.store, server) { req, server in
            guard req.method == "POST", req.path.hasSuffix("/changes") else { return try server.handle(req) }
            let batch = try JSONDecoder().decode(Wire.PushRequest.self, from: Data(req.body))
            let results = batch.transactions.map {
                ["type": "transaction", "id": $0.id, "status": "rejected", "code": "balance_overflow", "detail": "too much money"]
            }
            return TransportResponse(status: 200, body: Array(try JSONSerialization.data(withJSONObject: ["results": results])))
        }
        refusing.now = { 1_700_000_000_000 }
        refusing.onEvent = { log.append($0) }
        let tx = try mom.service.addMoney(childId: ann.id, cents: 250, note: "birthday")
        XCTAssertEqual(try mom.balances(), [ann.id: 1250])
        try refusing.sync()
        let rejected = try mom.store.rejectedChanges()
        XCTAssertEqual(rejected.count, 1)
        let r = try XCTUnwrap(rejected.first)
        XCTAssertEqual(r.kind, .transaction)
        XCTAssertEqual(r.id, tx.id)
        XCTAssertEqual(r.code, "balance_overflow")
        XCTAssertEqual(r.detail, "too much money")
        XCTAssertEqual(r.rejectedAt, 1_700_000_000_000)
        XCTAssertEqual(r.transaction?.amountCents, 250)
        XCTAssertEqual(r.transaction?.note, "birthday")
        XCTAssertEqual(r.transaction?.childId, ann.id)
        XCTAssertEqual(log.events.filter { if case .rejected(let e) = $0 { return e == r }; return false }.count, 1)
        // Out of the balance, like on the server and every other device.
        XCTAssertEqual(try mom.balances(), [ann.id: 1000])
        try dad.engine.sync()
        XCTAssertEqual(try dad.balances(), try mom.balances())
        XCTAssertEqual(try mom.store.pendingCount(), 0)
        XCTAssertTrue(try mom.store.dismissRejected(.transaction, id: tx.id.uppercased()))
        XCTAssertTrue(try mom.store.rejectedChanges().isEmpty)
        XCTAssertFalse(try mom.store.dismissRejected(.transaction, id: tx.id))
    }

    func testRejectionWithoutDetailGetsASentenceForItsCode() throws {
        let (server, mom, _, ann) = try makePair()
        let refusing = engine(mom.store, server) { req, server in
            guard req.method == "POST", req.path.hasSuffix("/changes") else { return try server.handle(req) }
            let batch = try JSONDecoder().decode(Wire.PushRequest.self, from: Data(req.body))
            let results = batch.transactions.map { ["type": "transaction", "id": $0.id, "status": "rejected", "code": "unknown_child"] }
            return TransportResponse(status: 200, body: Array(try JSONSerialization.data(withJSONObject: ["results": results])))
        }
        let tx = try mom.service.addMoney(childId: ann.id, cents: 5)
        let undo = try mom.service.undo(transactionId: tx.id)
        try refusing.sync()
        let rejected = try mom.store.rejectedChanges()
        XCTAssertEqual(Set(rejected.map(\.id)), [tx.id, undo.id])
        XCTAssertEqual(rejected.first { $0.id == tx.id }?.detail, SyncEngine.rejectionDetail(code: "unknown_child"))
        XCTAssertFalse(SyncEngine.rejectionDetail(code: "unknown_child").isEmpty)
        XCTAssertEqual(try mom.balances(), [ann.id: 1000])
    }

    // MARK: 5. Share upload

    func testSharingIsMarkedUploadedOnlyWhenTheQueueDrained() throws {
        let server = FakeLedgerServer()
        let mom = try Device(server: server)
        try mom.signup("mom")
        let ann = try mom.service.addChild(name: "Ann")
        try mom.service.addMoney(childId: ann.id, cents: 10)
        // The server takes the child but answers nothing for the transaction.
        let silent = engine(mom.store, server) { req, server in
            guard req.method == "POST", req.path.hasSuffix("/changes") else { return try server.handle(req) }
            var batch = try JSONDecoder().decode(Wire.PushRequest.self, from: Data(req.body))
            batch.transactions = []
            var forwarded = req
            forwarded.body = Array(try JSONEncoder().encode(batch))
            return try server.handle(forwarded)
        }
        XCTAssertThrowsError(try ShareFlow(engine: silent).enable(name: "Smiths")) { error in
            XCTAssertEqual((error as? UploadIncomplete)?.pending, 1, "\(error)")
        }
        XCTAssertEqual(try mom.store.phase(), .sharing(.householdCreated))
        try mom.engine.sync()
        XCTAssertEqual(try mom.store.phase(), .shared)
        XCTAssertEqual(server.balances(try mom.store.household().id), [ann.id: 10])
    }

    // MARK: 6. Cached balances

    func testCachedBalancesEqualTheSumsThroughEveryPath() throws {
        let (server, mom, dad, ann) = try makePair()
        var rng = SeededGenerator(seed: 7)
        for step in 0..<60 {
            let device = Bool.random(using: &rng) ? mom : dad
            let children = try device.service.children()
            let child = children[Int.random(in: 0..<children.count, using: &rng)].child
            switch Int.random(in: 0..<10, using: &rng) {
            case 0: try device.service.addChild(name: "Kid \(step)")
            case 1...4: try device.service.addMoney(childId: child.id, cents: Int64.random(in: 1...900, using: &rng))
            case 5...6: try device.service.takeMoney(childId: child.id, cents: Int64.random(in: 1...900, using: &rng))
            case 7: _ = try? device.service.undoLast(childId: child.id)
            default: try device.engine.sync()
            }
            XCTAssertTrue(try device.store.balanceMismatches().isEmpty, "step \(step)")
        }
        for _ in 0..<2 { try mom.engine.sync(); try dad.engine.sync() }
        XCTAssertEqual(try mom.balances(), try dad.balances())
        XCTAssertEqual(try mom.balances(), server.balances(try mom.store.household().id))
        // Leaving gives every record a new id: the balances move with them.
        try JoinFlow(engine: dad.engine).leave()
        XCTAssertTrue(try dad.store.balanceMismatches().isEmpty)
        XCTAssertEqual(try dad.balances().values.sorted(), try mom.balances().values.sorted())
        XCTAssertEqual(try mom.store.balance(childId: ann.id), try mom.store.history(childId: ann.id).map(\.transaction.amountCents).reduce(0, +))
    }

    func testMigrationFillsTheBalanceCacheOfAnExistingStore() throws {
        let path = tempStorePath()
        do {
            let db = try SQLiteConnection(path: path)
            try Migrator.migrate(db, Array(LedgerStore.migrations.prefix(1)))
            try db.execute("""
                INSERT INTO children (id, name, sort_order, archived, created_at, modified_at, modified_by) VALUES ('c1', 'Ann', 0, 0, 1, 1, 'x');
                INSERT INTO transactions (id, child_id, amount_cents, note, source, created_at) VALUES ('t1', 'c1', 500, '', 'manual', 1), ('t2', 'c1', -120, '', 'manual', 2);
                """)
        }
        let store = try LedgerStore(path: path)
        XCTAssertEqual(try store.balance(childId: "c1"), 380)
        XCTAssertTrue(try store.balanceMismatches().isEmpty)
    }
}
