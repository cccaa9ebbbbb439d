import Foundation
@testable import LedgerClient
import LedgerClientTesting
import LedgerModel
import LedgerServer
import XCTest

/// The real client over its real `URLSession` transport against a real server started in
/// this process on an ephemeral loopback port.
final class EndToEndTests: XCTestCase {
    private var app: LedgerApp!
    private var directory: String!
    private var base: String { "http://127.0.0.1:\(app.port)" }

    override func setUpWithError() throws {
        directory = try LoopbackServer.makeDirectory("kidledger-e2e")
        app = try LoopbackServer.start(in: directory)
    }

    override func tearDown() {
        app?.stop()
        app = nil
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// One phone: its own SQLite file, service and engine; `faults` can take it offline.
    final class Phone {
        let service: LedgerService
        let engine: SyncEngine
        let faults: FaultInjectingTransport
        var store: LedgerClient.LedgerStore { service.store }

        init(path: String, base: String) throws {
            let store = try LedgerClient.LedgerStore(path: path)
            service = LedgerService(store: store)
            faults = FaultInjectingTransport(wrapping: URLSessionTransport(baseURL: URL(string: base)!), seed: 1)
            engine = SyncEngine(store: store, transport: faults, retry: RetryPolicy(maxAttempts: 2, sleep: { _ in }))
        }

        var offline: Bool {
            get { faults.faults.offline }
            set { faults.faults = .init(offline: newValue) }
        }

        func signup(_ handle: String) throws {
            try engine.signUpForTests(handle: handle, displayName: handle.capitalized)
        }

        func balances() throws -> [String: Int64] {
            Dictionary(uniqueKeysWithValues: try service.children().map { ($0.child.id, $0.balanceCents) })
        }

        var api: APIClient {
            get throws { APIClient(transport: faults, token: try store.string(.token)) }
        }
    }

    private func phone(_ name: String) throws -> Phone {
        try Phone(path: directory + "/\(name).sqlite", base: base)
    }

    /// The server's view: child id → balance, read with `GET /v1/households/{id}/children`.
    private func serverBalances(_ phone: Phone) throws -> [String: Int64] {
        let hh = try phone.store.household().id
        let response = try phone.api.call("GET", "/v1/households/\(hh)/children?includeArchived=true")
        let json = try JSONValue.parse(response.body)
        var out: [String: Int64] = [:]
        for item in json["items"]?.arrayValue ?? [] {
            guard let id = item["id"]?.stringValue, let cents = item["balanceCents"]?.intValue else {
                XCTFail("child without id or balance: \(item.serializedString)"); continue
            }
            out[id.lowercased()] = cents
        }
        return out
    }

    /// The server's child names by id.
    private func serverNames(_ phone: Phone) throws -> [String: String] {
        let hh = try phone.store.household().id
        let json = try JSONValue.parse(try phone.api.call("GET", "/v1/households/\(hh)/children?includeArchived=true").body)
        var out: [String: String] = [:]
        for item in json["items"]?.arrayValue ?? [] {
            if let id = item["id"]?.stringValue, let name = item["name"]?.stringValue { out[id.lowercased()] = name }
        }
        return out
    }

    /// The server's transactions of the household (every page).
    private func serverTransactions(_ phone: Phone) throws -> [JSONValue] {
        let hh = try phone.store.household().id
        var all: [JSONValue] = []
        var cursor: String?
        repeat {
            var path = "/v1/households/\(hh)/transactions?limit=100"
            if let cursor { path += "&cursor=\(APIClient.escape(cursor))" }
            let json = try JSONValue.parse(try phone.api.call("GET", path).body)
            all += json["items"]?.arrayValue ?? []
            cursor = json["nextCursor"]?.stringValue
        } while cursor != nil
        return all
    }

    /// Mum's offline ledger, shared, with dad joined from his own store. Returns Ann.
    private func sharedPair() throws -> (mum: Phone, dad: Phone, ann: ChildRecord) {
        let mum = try phone("mum"), dad = try phone("dad")
        let ann = try mum.service.addChild(name: "Ann")
        try mum.service.addMoney(childId: ann.id, cents: 1_000, note: "birthday")
        try mum.service.takeMoney(childId: ann.id, cents: 250, note: "sweets")
        XCTAssertEqual(try mum.service.status(), .accountUnavailable(pending: 0), "not signed in yet")
        try mum.signup("mum")
        XCTAssertEqual(try mum.service.status(), .synced, "signed in, local only, nothing queued")

        let flow = ShareFlow(engine: mum.engine)
        XCTAssertEqual(try flow.preview(name: "Smiths"), .init(householdName: "Smiths", children: 1, transactions: 2))
        try flow.enable(name: "Smiths")
        XCTAssertEqual(try mum.store.phase(), .shared)
        XCTAssertEqual(try mum.service.status(), .synced)
        XCTAssertEqual(try serverBalances(mum), [ann.id: 750])

        try dad.signup("dad")
        let invited = try flow.invite(handle: "dad", readOnly: false)
        XCTAssertEqual(invited.permission, "readWrite")
        let invitations = try JoinFlow(engine: dad.engine).invitations()
        XCTAssertEqual(invitations.count, 1)
        let invitation = try XCTUnwrap(invitations.first)
        XCTAssertEqual(invitation.householdId.lowercased(), try mum.store.household().id)
        XCTAssertEqual(invitation.householdName, "Smiths")
        if let id = invited.invitationId { XCTAssertEqual(id.lowercased(), invitation.id.lowercased()) }
        let joined = try JoinFlow(engine: dad.engine).join(invitationId: invitation.id, replaceLocal: false)
        XCTAssertEqual(joined.household.id, try mum.store.household().id)
        XCTAssertNil(joined.exportPath)
        XCTAssertEqual(try dad.store.phase(), .shared)
        XCTAssertEqual(try dad.balances(), [ann.id: 750])
        XCTAssertEqual(try dad.service.status(), .synced)
        return (mum, dad, ann)
    }

    // MARK: (1) share, invite, join, edit on both, sync

    func testEndToEndShareInviteJoinEditAndSync() throws {
        let (mum, dad, ann) = try sharedPair()
        try mum.service.addMoney(childId: ann.id, cents: 500, note: "chores")
        let ben = try dad.service.addChild(name: "Ben")
        try dad.service.addMoney(childId: ben.id, cents: 300)
        try dad.service.takeMoney(childId: ann.id, cents: 100, note: "comic")
        XCTAssertEqual(try mum.service.status(), .changesPending(1))
        XCTAssertEqual(try dad.service.status(), .changesPending(3))

        try mum.engine.sync()
        try dad.engine.sync()
        try mum.engine.sync()

        let expected: [String: Int64] = [ann.id: 1_150, ben.id: 300]
        XCTAssertEqual(try mum.balances(), expected)
        XCTAssertEqual(try dad.balances(), expected)
        XCTAssertEqual(try serverBalances(mum), expected)
        XCTAssertEqual(try serverBalances(dad), expected)
        XCTAssertEqual(try mum.store.children(), try dad.store.children())
        XCTAssertEqual(try mum.store.allTransactions().map(\.id).sorted(), try dad.store.allTransactions().map(\.id).sorted())
        XCTAssertEqual(try serverTransactions(mum).count, 5)
        XCTAssertEqual(try mum.service.status(), .synced)
        XCTAssertEqual(try dad.service.status(), .synced)
    }

    /// More records than one push batch (400) and than one pulled page.
    func testLargeOfflineLedgerUploadsInBatchesAndJoinsInPages() throws {
        let mum = try phone("mum"), dad = try phone("dad")
        let ann = try mum.service.addChild(name: "Ann"), ben = try mum.service.addChild(name: "Ben")
        try mum.store.transaction {
            for i in 0..<450 { try mum.service.addMoney(childId: i % 2 == 0 ? ann.id : ben.id, cents: Int64(i + 1)) }
        }
        try mum.signup("mum")
        try ShareFlow(engine: mum.engine).enable()
        XCTAssertEqual(try mum.store.pendingCount(), 0)
        try dad.signup("dad")
        let invite = try ShareFlow(engine: mum.engine).invite(handle: "dad", readOnly: false)
        dad.engine.pullPageSize = 100
        _ = try JoinFlow(engine: dad.engine).join(invitationId: try XCTUnwrap(invite.invitationId), replaceLocal: false)
        let expected = try mum.balances()
        var annTotal: Int64 = 0
        for i in stride(from: 0, to: 450, by: 2) { annTotal += Int64(i + 1) }
        XCTAssertEqual(expected[ann.id], annTotal)
        XCTAssertEqual(try dad.balances(), expected)
        XCTAssertEqual(try serverBalances(dad), expected)
        XCTAssertEqual(try dad.store.allTransactions().count, 450)
        try dad.service.undoLast(childId: ben.id)
        try dad.engine.sync(); try mum.engine.sync()
        XCTAssertEqual(try mum.balances(), try dad.balances())
        XCTAssertEqual(try serverBalances(mum), try mum.balances())
    }

    /// A long-polling sync on dad's phone returns as soon as mum's push lands.
    func testLongPollWakesOnOtherParentsPush() throws {
        let (mum, dad, ann) = try sharedPair()
        nonisolated(unsafe) let waiting = dad
        let done = expectation(description: "dad's long poll returned")
        nonisolated(unsafe) var outcome: Result<SyncEngine.Report, any Error>?
        let started = Date()
        Thread.detachNewThread {
            outcome = Result { try waiting.engine.sync(wait: 20) }
            done.fulfill()
        }
        Thread.sleep(forTimeInterval: 0.3)
        try mum.service.addMoney(childId: ann.id, cents: 5)
        try mum.engine.sync()
        wait(for: [done], timeout: 10)
        XCTAssertLessThan(Date().timeIntervalSince(started), 10, "woken by the push, not by the 20 s wait")
        XCTAssertEqual(try outcome?.get().pulledTransactions, 1)
        XCTAssertEqual(try dad.balances(), [ann.id: 755])
    }

    // MARK: (2) both parents undo the same transaction offline

    func testConcurrentOfflineUndoMakesExactlyOneReversal() throws {
        let (mum, dad, ann) = try sharedPair()
        let last = try XCTUnwrap(try mum.store.history(childId: ann.id, limit: 1).first)
        mum.offline = true; dad.offline = true
        let mumUndo = try mum.service.undoLast(childId: ann.id)
        dad.service.now = { Timestamp.nowMs() + 1 }
        let dadUndo = try dad.service.undoLast(childId: ann.id)
        XCTAssertEqual(mumUndo.id, dadUndo.id, "the reversal id is deterministic")
        XCTAssertEqual(mumUndo.reversesId, dadUndo.reversesId)
        XCTAssertThrowsError(try mum.engine.sync())
        XCTAssertEqual(try mum.service.status(), .offline(pending: 1))
        XCTAssertThrowsError(try dad.engine.sync())
        XCTAssertEqual(try dad.service.status(), .offline(pending: 1))

        mum.offline = false; dad.offline = false
        try mum.engine.sync()
        let dadReport = try dad.engine.sync()
        // The server treats a reversal of the same target, child and amount as the same record
        // ("unchanged"); dad then adopts mum's copy from the feed.
        XCTAssertEqual(dadReport.pushed, 1)
        XCTAssertEqual(dadReport.rejected, 0)
        try mum.engine.sync()

        for (who, p) in [("mum", mum), ("dad", dad)] {
            let reversals = try p.store.allTransactions().filter { $0.reversesId != nil }
            XCTAssertEqual(reversals.map(\.id), [mumUndo.id], who)
            XCTAssertEqual(reversals.first?.reversesId, mumUndo.reversesId, who)
            XCTAssertEqual(try p.balances(), [ann.id: 1_000], who)
            XCTAssertEqual(try p.store.pendingCount(), 0, who)
            XCTAssertTrue(try p.store.rejectedRecords().isEmpty, who)
            XCTAssertEqual(try p.service.status(), .synced, who)
            XCTAssertEqual(reversals.first?.authorAccountId, try mum.store.string(.accountId), "\(who) holds mum's reversal")
        }
        XCTAssertEqual(try mum.store.transaction(id: mumUndo.id), try dad.store.transaction(id: mumUndo.id),
                       "both devices hold the server's copy of the reversal")
        let onServer = try serverTransactions(mum).filter { $0["reversesId"]?.stringValue != nil }
        XCTAssertEqual(onServer.count, 1)
        XCTAssertEqual(onServer.first?["reversesId"]?.stringValue?.lowercased(), last.transaction.id)
        XCTAssertEqual(try serverBalances(mum), [ann.id: 1_000])
    }

    // MARK: (3) both parents rename the same child

    func testRenameRaceLastWriterWinsOnBoth() throws {
        let (mum, dad, ann) = try sharedPair()
        let start = Timestamp.nowMs()
        // Dad renames later but syncs first; mum's earlier rename then loses on push.
        mum.service.now = { start }
        try mum.service.renameChild(id: ann.id, to: "Annie")
        dad.service.now = { start + 1_000 }
        try dad.service.renameChild(id: ann.id, to: "Anna")
        try dad.engine.sync()
        try mum.engine.sync()
        try dad.engine.sync()
        XCTAssertEqual(try mum.store.child(id: ann.id)?.name, "Anna")
        XCTAssertEqual(try dad.store.child(id: ann.id)?.name, "Anna")
        XCTAssertEqual(try serverNames(mum), [ann.id: "Anna"])

        // Mum renames later but syncs first; dad's earlier rename then loses on pull.
        mum.service.now = { start + 3_000 }
        try mum.service.renameChild(id: ann.id, to: "Ann-Marie")
        dad.service.now = { start + 2_000 }
        try dad.service.renameChild(id: ann.id, to: "Nan")
        try mum.engine.sync()
        try dad.engine.sync()
        try mum.engine.sync()
        XCTAssertEqual(try mum.store.child(id: ann.id)?.name, "Ann-Marie")
        XCTAssertEqual(try dad.store.child(id: ann.id)?.name, "Ann-Marie")
        XCTAssertEqual(try serverNames(dad), [ann.id: "Ann-Marie"])
        XCTAssertEqual(try mum.store.children(), try dad.store.children())
        XCTAssertEqual(try mum.service.status(), .synced)
        XCTAssertEqual(try dad.service.status(), .synced)
    }

    // MARK: (4) the owner revokes dad

    func testRevokedParentIsFrozenAndKeepsLocalData() throws {
        let (mum, dad, ann) = try sharedPair()
        try dad.service.addMoney(childId: ann.id, cents: 40, note: "found coins")
        try dad.engine.sync()
        try dad.service.takeMoney(childId: ann.id, cents: 15, note: "not yet synced")
        let before = try dad.store.allTransactions()
        let childrenBefore = try dad.store.children()

        let revoked = try ShareFlow(engine: mum.engine).revoke(handle: "dad")
        XCTAssertEqual(revoked.status, "revoked")
        XCTAssertEqual(try ShareFlow(engine: mum.engine).participants().filter { $0.handle == "dad" && $0.status != "revoked" }, [])

        XCTAssertThrowsError(try dad.engine.sync()) { XCTAssertEqual($0 as? ClientError, .frozen(.accessRevoked)) }
        XCTAssertEqual(try dad.service.status(), .attentionRequired(.accessRevoked, pending: 1))
        XCTAssertEqual(try dad.store.allTransactions(), before, "nothing local was deleted")
        XCTAssertEqual(try dad.store.children(), childrenBefore)
        XCTAssertEqual(try dad.balances(), [ann.id: 775])
        XCTAssertThrowsError(try dad.service.addMoney(childId: ann.id, cents: 1)) {
            XCTAssertEqual($0 as? ClientError, .frozen(.accessRevoked))
        }
        // A second sync keeps the state (and still deletes nothing).
        XCTAssertThrowsError(try dad.engine.sync())
        XCTAssertEqual(try dad.service.status(), .attentionRequired(.accessRevoked, pending: 1))
        XCTAssertEqual(try dad.store.allTransactions(), before)

        // Mum's ledger is unaffected and never saw dad's unsynced take.
        try mum.engine.sync()
        XCTAssertEqual(try mum.balances(), [ann.id: 790])
        XCTAssertEqual(try serverBalances(mum), [ann.id: 790])
    }

    // MARK: (5) the copy a revoked parent keeps can become a household of its own

    func testKeptCopyAfterRevocationSharesAsItsOwnHousehold() throws {
        let (mum, dad, ann) = try sharedPair()
        _ = try ShareFlow(engine: mum.engine).revoke(handle: "dad")
        XCTAssertThrowsError(try dad.engine.sync()) { XCTAssertEqual($0 as? ClientError, .frozen(.accessRevoked)) }
        try JoinFlow(engine: dad.engine).leave()
        XCTAssertEqual(try dad.store.phase(), .localOnly)
        XCTAssertEqual(try dad.service.children().map(\.balanceCents), [750])

        // The server's ids are global: the kept copy must not reuse mum's.
        try ShareFlow(engine: dad.engine).enable(name: "Dad's")
        XCTAssertEqual(try dad.service.status(), .synced)
        XCTAssertTrue(try dad.store.rejectedRecords().isEmpty)
        XCTAssertEqual(try serverBalances(dad), try dad.balances())
        XCTAssertEqual(try serverTransactions(dad).count, 2)
        XCTAssertEqual(try serverBalances(mum), [ann.id: 750], "mum's household is untouched")
    }
}
