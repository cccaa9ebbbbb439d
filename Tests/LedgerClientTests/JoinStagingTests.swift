import Foundation
@testable import LedgerClient
import LedgerClientTesting
import LedgerModel
import XCTest

/// A join's first fetch is written page by page into staging tables and moved into the
/// replica in one transaction: one page in memory at a time, and a kill resumes from the last
/// page written instead of from the start.
final class JoinStagingTests: XCTestCase {
    /// Mom's shared ledger: Ann and Ben, 24 transactions (one of them undone), and Dad invited.
    private func household() throws -> (FakeLedgerServer, Device, Device, String) {
        let server = FakeLedgerServer()
        let mom = try Device(server: server), dad = try Device(server: server, seed: 2)
        try mom.signup("mom"); try dad.signup("dad")
        let ann = try mom.service.addChild(name: "Ann"), ben = try mom.service.addChild(name: "Ben")
        for i in 1...12 {
            try mom.service.addMoney(childId: ann.id, cents: Int64(i))
            try mom.service.takeMoney(childId: ben.id, cents: Int64(i))
        }
        try mom.service.undoLast(childId: ann.id)
        try ShareFlow(engine: mom.engine).enable(name: "Smiths")
        let invitation = try XCTUnwrap(ShareFlow(engine: mom.engine).invite(handle: "dad", readOnly: false).invitationId)
        return (server, mom, dad, invitation)
    }

    func testAnInterruptedJoinResumesFromTheLastStagedPage() throws {
        let (server, mom, dad, invitation) = try household()
        let feedRequests = Counter()
        let cut = Locked(false)
        let engine = SyncEngine(store: dad.store, transport: InMemoryTransport { req in
            if req.method == "GET", req.path.contains("/changes") {
                if cut.withLock({ $0 }) { throw TransportError.unreachable("killed") }
                if feedRequests.next() == 2 { cut.withLock { $0 = true } }
            }
            return try server.handle(req)
        }, retry: .once)
        engine.joinPageSize = 5
        // The first three pages are fetched and staged, then the network goes.
        XCTAssertThrowsError(try JoinFlow(engine: engine).join(invitationId: invitation, replaceLocal: false))
        guard case .joining(.fetching, _, _) = try dad.store.phase() else { return XCTFail("\(try dad.store.phase())") }
        XCTAssertEqual(try dad.store.counts().transactions, 0, "nothing reaches the replica before the last page")
        let staged = try dad.store.db.queryOne("SELECT (SELECT COUNT(*) FROM join_children) + (SELECT COUNT(*) FROM join_transactions)")?.int(0)
        XCTAssertEqual(staged, 15)
        XCTAssertNotNil(try dad.store.string(.joinStageToken))

        // Resuming asks only for the pages after the staged ones.
        cut.withLock { $0 = false }
        let before = feedRequests.next()
        engine.joinPageSize = 5
        try engine.sync()
        XCTAssertEqual(try dad.store.phase(), .shared)
        XCTAssertLessThanOrEqual(feedRequests.next() - before - 1, 4, "27 records from the 16th: three pages, one pull")
        XCTAssertEqual(try dad.balances(), try mom.balances())
        XCTAssertEqual(try dad.store.allTransactions().map(\.id).sorted(), try mom.store.allTransactions().map(\.id).sorted())
        XCTAssertTrue(try dad.store.balanceMismatches().isEmpty)
        XCTAssertEqual(try dad.store.db.queryOne("SELECT COUNT(*) FROM join_transactions")?.int(0), 0, "the stage is emptied")
        XCTAssertNil(try dad.store.string(.joinStageToken))
        // And the replica keeps syncing from where the join got to.
        try mom.service.addMoney(childId: try mom.service.children()[0].child.id, cents: 1_000)
        try mom.engine.sync()
        try dad.engine.sync()
        XCTAssertEqual(try dad.balances(), try mom.balances())
    }

    func testJoiningAgainTheHouseholdItHoldsMergesWithThePendingEdits() throws {
        let (_, mom, dad, invitation) = try household()
        _ = try JoinFlow(engine: dad.engine).join(invitationId: invitation, replaceLocal: false)
        let ann = try XCTUnwrap(dad.service.children().first { $0.child.name == "Ann" }?.child)
        // Dad records 3 cents offline; meanwhile Mom revokes him, adds 50 and invites him again.
        try dad.service.addMoney(childId: ann.id, cents: 3)
        _ = try ShareFlow(engine: mom.engine).revoke(handle: "dad")
        try mom.service.addMoney(childId: ann.id, cents: 50)
        try mom.engine.sync()
        XCTAssertThrowsError(try dad.engine.sync())
        XCTAssertEqual(try dad.store.attention(), .accessRevoked)
        let again = try XCTUnwrap(ShareFlow(engine: mom.engine).invite(handle: "dad", readOnly: false).invitationId)
        dad.engine.joinPageSize = 7
        _ = try JoinFlow(engine: dad.engine).join(invitationId: again, replaceLocal: false)
        XCTAssertEqual(try dad.store.phase(), .shared)
        XCTAssertNil(try dad.store.attention())
        XCTAssertEqual(try dad.store.pendingCount(), 1, "the offline edit is still to be pushed")
        try dad.engine.sync()
        try mom.engine.sync()
        XCTAssertEqual(try dad.balances(), try mom.balances())
        XCTAssertEqual(try mom.store.balance(childId: ann.id), 66 + 3 + 50)
        XCTAssertTrue(try dad.store.balanceMismatches().isEmpty)
    }

    func testAnUnreadableChildIsSetAsideAndItsTransactionsWaitForIt() throws {
        let (server, mom, dad, invitation) = try household()
        let ben = try XCTUnwrap(mom.service.children().first { $0.child.name == "Ben" }?.child)
        let engine = SyncEngine(store: dad.store, transport: InMemoryTransport { req in
            var response = try server.handle(req)
            if req.method == "GET", req.path.contains("/changes") {
                var page = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
                page["children"] = (page["children"] as? [[String: Any]] ?? []).map { c in
                    var c = c
                    if (c["id"] as? String)?.lowercased() == ben.id { c["modifiedAt"] = 42 }
                    return c
                }
                response.body = Array(try JSONSerialization.data(withJSONObject: page))
            }
            return response
        }, retry: .once)
        _ = try JoinFlow(engine: engine).join(invitationId: invitation, replaceLocal: false)
        XCTAssertEqual(try dad.store.unmergedChanges().map(\.id), [ben.id])
        XCTAssertEqual(try dad.store.deferredCount(), 12, "Ben's transactions wait for Ben")
        XCTAssertEqual(try dad.service.children().map(\.child.name), ["Ann"])
        XCTAssertEqual(try dad.balances()[try XCTUnwrap(dad.service.children().first?.child.id)], try mom.balances().values.max())
    }

    func testAFeedThatOnlyDescribesTheAccessKeepsTheHouseholdName() throws {
        let (server, _, dad, invitation) = try household()
        let engine = SyncEngine(store: dad.store, transport: InMemoryTransport { req in
            var response = try server.handle(req)
            if req.method == "GET", req.path.contains("/changes") {
                var page = try XCTUnwrap(JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any])
                page["household"] = nil
                response.body = Array(try JSONSerialization.data(withJSONObject: page))
            }
            return response
        }, retry: .once)
        let before = try dad.store.household().name
        _ = try JoinFlow(engine: engine).join(invitationId: invitation, replaceLocal: false)
        XCTAssertEqual(try dad.store.household().name, before)
        XCTAssertEqual(try dad.store.household().permission, .readWrite)
        XCTAssertEqual(try dad.store.household().role, .participant)
    }
}
