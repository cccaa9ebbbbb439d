import Foundation
@testable import LedgerClient
import LedgerClientTesting
import LedgerModel
import XCTest

/// Getting out of unusual states: calls that fail without freezing the ledger, a resumed
/// migration that reports and clears its outcome, a join whose invitation vanished, ledgers
/// whose ids belong to another household, and refusals that must not drop records silently.
final class RecoveryTests: XCTestCase {
    private func sharedOwner(_ server: FakeLedgerServer) throws -> (Device, ChildRecord) {
        let mom = try Device(server: server)
        try mom.signup("mom")
        let ann = try mom.service.addChild(name: "Ann")
        try mom.service.addMoney(childId: ann.id, cents: 1_000)
        try ShareFlow(engine: mom.engine).enable(name: "Smiths")
        return (mom, ann)
    }

    // MARK: A 404 that is not the household's

    func testUnknownHandleDoesNotFreezeTheLedger() throws {
        let server = FakeLedgerServer()
        let (mom, ann) = try sharedOwner(server)
        XCTAssertThrowsError(try ShareFlow(engine: mom.engine).invite(handle: "nobody", readOnly: false)) {
            XCTAssertEqual(($0 as? ClientError), .server(.problem(status: 404, code: "unknown_handle", detail: nil, retryAfterSeconds: nil)))
        }
        XCTAssertNil(try mom.store.attention())
        XCTAssertEqual(try mom.service.status(), .synced)
        XCTAssertNoThrow(try mom.service.addMoney(childId: ann.id, cents: 5), "editing goes on")
    }

    func testDeletedHouseholdFreezesAndTheOwnerCanKeepALocalCopy() throws {
        let server = FakeLedgerServer()
        let (mom, ann) = try sharedOwner(server)
        let hh = try mom.store.household().id
        server.state.withLock { _ = $0.households.removeValue(forKey: hh) }
        XCTAssertThrowsError(try mom.engine.sync()) { XCTAssertEqual($0 as? ClientError, .frozen(.householdDeleted)) }
        XCTAssertEqual(try mom.service.status(), .attentionRequired(.householdDeleted, pending: 0))
        XCTAssertThrowsError(try mom.service.addMoney(childId: ann.id, cents: 1))
        try JoinFlow(engine: mom.engine).leave()
        XCTAssertEqual(try mom.store.phase(), .localOnly)
        XCTAssertEqual(try mom.service.children().map(\.balanceCents), [1_000], "nothing local was lost")
        XCTAssertNoThrow(try mom.service.addMoney(childId: try XCTUnwrap(mom.service.children().first { $0.child.name == "Ann" }).child.id, cents: 1))
    }

    func testFrozenMessageSaysWhatToDoWithoutCommandNames() throws {
        let revoked = try XCTUnwrap(LedgerError(ClientError.frozen(.accessRevoked)).errorDescription)
        XCTAssertTrue(revoked.contains("leave the household"), revoked)
        let switched = try XCTUnwrap(LedgerError(ClientError.frozen(.accountChanged)).errorDescription)
        XCTAssertTrue(switched.contains("Sign in to this ledger's account again"), switched)
        for text in [revoked, switched] { XCTAssertFalse(text.contains("kidledger"), text) }
        XCTAssertEqual(LedgerError(ClientError.keepLocalLedger(children: 1, transactions: 2)), .joinWouldReplaceLocalLedger)
    }

    // MARK: Resumed migration

    func testResumedShareEnableReportsUploadAndEndsSynced() throws {
        let server = FakeLedgerServer()
        let mom = try Device(server: server)
        try mom.signup("mom")
        let ann = try mom.service.addChild(name: "Ann")
        for i in 1...5 { try mom.service.addMoney(childId: ann.id, cents: Int64(i)) }
        // The household is created, then the network goes away before the upload.
        let counter = Counter()
        let cut = SyncEngine(store: mom.store, transport: InMemoryTransport { req in
            if counter.next() >= 1 { throw TransportError.unreachable("down") }
            return try server.handle(req)
        }, retry: .once)
        XCTAssertThrowsError(try ShareFlow(engine: cut).enable())
        XCTAssertEqual(try mom.store.phase(), .sharing(.householdCreated))
        XCTAssertEqual(try mom.service.status(), .offline(pending: 6))

        let report = try mom.engine.sync()
        XCTAssertEqual(report.pushed, 6, "the resumed upload is reported")
        XCTAssertEqual(try mom.service.status(), .synced)

        // Same through `share enable` again: the offline outcome does not outlive the success.
        let dad = try Device(server: server)
        try dad.signup("dad")
        let zed = try dad.service.addChild(name: "Zed")
        try dad.service.addMoney(childId: zed.id, cents: 7)
        let cutDad = SyncEngine(store: dad.store, transport: InMemoryTransport { req in
            if req.method == "POST" { throw TransportError.unreachable("down") }
            return try server.handle(req)
        }, retry: .once)
        XCTAssertThrowsError(try ShareFlow(engine: cutDad).enable())
        XCTAssertEqual(try dad.service.status(), .offline(pending: 2))
        try ShareFlow(engine: dad.engine).enable()
        XCTAssertEqual(try dad.service.status(), .synced)
        XCTAssertEqual(server.balances(try dad.store.household().id), [zed.id: 7])
    }

    // MARK: Join whose invitation vanished

    func testJoinRollsBackWhenTheInvitationIsWithdrawn() throws {
        let server = FakeLedgerServer()
        let (mom, _) = try sharedOwner(server)
        let dad = try Device(server: server)
        try dad.signup("dad")
        let zed = try dad.service.addChild(name: "Zed")
        let invitation = try XCTUnwrap(try ShareFlow(engine: mom.engine).invite(handle: "dad", readOnly: false).invitationId)
        // The owner withdraws the invitation just as dad accepts it.
        let withdrawing = SyncEngine(store: dad.store, transport: InMemoryTransport { req in
            if req.path.hasSuffix("/accept") { server.state.withLock { _ = $0.invitations.removeValue(forKey: invitation) } }
            return try server.handle(req)
        }, retry: .once)
        XCTAssertThrowsError(try JoinFlow(engine: withdrawing).join(invitationId: invitation, replaceLocal: true,
                                                                    exportPath: NSTemporaryDirectory() + "kl-\(UUID().uuidString).json.gz")) {
            XCTAssertEqual($0 as? ClientError, .invitationWithdrawn)
        }
        XCTAssertEqual(try dad.store.phase(), .localOnly, "back where it was, not stuck joining")
        XCTAssertEqual(try dad.service.children().map(\.child.id), [zed.id])
        XCTAssertNoThrow(try dad.service.addMoney(childId: zed.id, cents: 1))
        XCTAssertNoThrow(try dad.engine.sync())
        XCTAssertNil(try dad.store.string(.joinPreviousPhase))
    }

    // MARK: Ids of another household

    func testLeaveGivesTheKeptCopyFreshIdsAndKeepsHistory() throws {
        let server = FakeLedgerServer()
        let (mom, ann) = try sharedOwner(server)
        let dad = try Device(server: server)
        try dad.signup("dad")
        let inv = try XCTUnwrap(try ShareFlow(engine: mom.engine).invite(handle: "dad", readOnly: false).invitationId)
        _ = try JoinFlow(engine: dad.engine).join(invitationId: inv, replaceLocal: false)
        try dad.service.undoLast(childId: ann.id)
        try dad.service.addMoney(childId: ann.id, cents: 250)
        try dad.engine.sync()
        let oldHousehold = try dad.store.household().id
        let oldIds = Set(try dad.store.allTransactions().map(\.id) + [ann.id])

        try JoinFlow(engine: dad.engine).leave()
        let kept = try dad.store.allTransactions()
        XCTAssertNotEqual(try dad.store.household().id, oldHousehold)
        XCTAssertTrue(Set(kept.map(\.id) + (try dad.store.children().map(\.id))).isDisjoint(with: oldIds))
        XCTAssertEqual(try dad.service.children().map(\.balanceCents), [250])
        for reversal in kept where reversal.reversesId != nil {
            XCTAssertEqual(reversal.id, LedgerIDs.reversalID(of: LedgerIDs.parse(reversal.reversesId!)!).lowercased)
        }
        XCTAssertEqual(try dad.store.pendingCount(), 0)

        try ShareFlow(engine: dad.engine).enable(name: "Dad's")
        XCTAssertEqual(server.balances(try dad.store.household().id), [try dad.service.children()[0].child.id: 250])
        XCTAssertEqual(server.balances(oldHousehold), [ann.id: 250], "the old household is untouched")
    }

    func testImportOfAnotherAccountsExportSharesAsANewHousehold() throws {
        let server = FakeLedgerServer()
        let (mom, ann) = try sharedOwner(server)
        try mom.service.undoLast(childId: ann.id)
        let path = NSTemporaryDirectory() + "kl-\(UUID().uuidString).json.gz"
        defer { try? FileManager.default.removeItem(atPath: path) }
        try LedgerExporter(store: mom.store).export(to: path, now: Timestamp.nowMs())

        let eve = try Device(server: server)
        try eve.signup("eve")
        try LedgerExporter(store: eve.store).importFile(path, now: Timestamp.nowMs())
        XCTAssertEqual(try eve.store.household().id, try mom.store.household().id)
        try ShareFlow(engine: eve.engine).enable()
        XCTAssertEqual(try eve.store.phase(), .shared)
        let hh = try eve.store.household().id
        XCTAssertNotEqual(hh, try mom.store.household().id, "a household of eve's own")
        XCTAssertEqual(server.balances(hh), try eve.balances())
        XCTAssertEqual(try eve.service.children().map(\.balanceCents), [0])
        XCTAssertEqual(try eve.store.allTransactions().count, 2)
        XCTAssertEqual(try eve.service.status(), .synced)
    }

    func testConflictWithoutServerCopyIsKeptAsideNotDropped() throws {
        let server = FakeLedgerServer()
        let (mom, ann) = try sharedOwner(server)
        let tx = try mom.service.addMoney(childId: ann.id, cents: 5)
        // A push answered `conflict` without `serverRecord`: the id is another household's.
        let foreign = SyncEngine(store: mom.store, transport: InMemoryTransport { req in
            guard req.method == "POST", req.path.hasSuffix("/changes") else { return try server.handle(req) }
            let batch = try JSONDecoder().decode(Wire.PushRequest.self, from: Data(req.body))
            let results = batch.transactions.map { #"{"type":"transaction","id":"\#($0.id)","status":"conflict"}"# }
            return TransportResponse(status: 200, body: Array(#"{"results":[\#(results.joined(separator: ","))]}"#.utf8))
        }, retry: .once)
        let report = try foreign.sync()
        XCTAssertEqual(report.rejected, 1)
        XCTAssertEqual(try mom.store.pendingCount(), 0)
        XCTAssertEqual(try mom.store.rejectedRecords().map(\.id), [tx.id])
        XCTAssertEqual(try mom.store.rejectedRecords().map(\.code), ["id_conflict"])
        XCTAssertEqual(try mom.balances(), server.balances(try mom.store.household().id), "local balance matches the server")
    }
}
