import Foundation
@testable import LedgerClient
import LedgerClientTesting
import LedgerModel
import XCTest

/// Requests and child mode on the device, without a server: the service's rules, the
/// deterministic payment, the merge rule for decisions, what a child's device refuses.
final class LedgerRequestTests: XCTestCase {
    private var directory: URL!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-requests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    }

    override func tearDown() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func sharedService() throws -> (LedgerService, ChildRecord) {
        let s = LedgerService(store: try LedgerStore(path: ":memory:"))
        try s.store.set(.accountId, "acc-parent")
        try s.store.setPhase(.shared)
        return (s, try s.addChild(name: "Ada"))
    }

    func testPaymentIdIsUUIDv5OfTheRequestInTheLedgerNamespace() {
        let id = "5d0c4a8e-2b7f-4e1a-9c3d-0a1b2c3d4e5f"
        XCTAssertEqual(RequestRecord.paymentId(of: id.uppercased()),
                       UUIDv5.make(namespace: LedgerIDs.namespace, name: "request:" + id).lowercased)
        XCTAssertNotEqual(RequestRecord.paymentId(of: id), RequestRecord.paymentId(of: UUID().lowercased))
    }

    func testApprovingASpendTakesAndAChorePaysOnceWithTheDeterministicId() throws {
        let (s, ada) = try sharedService()
        try s.addMoney(childId: ada.id, cents: 1_000)
        let spend = try s.makeRequest(childId: ada.id, kind: .spend, cents: 450, note: "book")
        let chore = try s.makeRequest(childId: ada.id, kind: .chore, cents: 200, note: "dishes")
        XCTAssertEqual(try s.store.pendingRequestCount(), 2)
        XCTAssertEqual(spend.createdBy, "acc-parent", "a parent's request names the parent")

        let approved = try s.decide(requestId: spend.id, approve: true)
        XCTAssertEqual(approved.status, .approved)
        XCTAssertEqual(approved.paymentId, RequestRecord.paymentId(of: spend.id))
        let payment = try XCTUnwrap(s.store.transaction(id: RequestRecord.paymentId(of: spend.id)))
        XCTAssertEqual(payment.amountCents, -450)
        XCTAssertEqual(payment.note, "book")
        XCTAssertEqual(try s.decide(requestId: spend.id.uppercased(), approve: true), approved, "approving again changes nothing")
        XCTAssertThrowsError(try s.decide(requestId: spend.id, approve: false)) {
            XCTAssertEqual($0 as? ClientError, .requestDecided("approved"))
        }
        try s.decide(requestId: chore.id, approve: true, cents: 300)
        XCTAssertEqual(try s.store.transaction(id: RequestRecord.paymentId(of: chore.id))?.amountCents, 300, "another amount is paid")
        XCTAssertEqual(try s.store.request(id: chore.id)?.amountCents, 300)
        XCTAssertEqual(try s.store.balance(childId: ada.id), 1_000 - 450 + 300)
        XCTAssertEqual(try s.store.pendingRequestCount(), 0)
        // Queued: each request and each payment.
        XCTAssertNotNil(try s.store.pendingVersion(.request, id: spend.id))
        XCTAssertNotNil(try s.store.pendingVersion(.transaction, id: RequestRecord.paymentId(of: spend.id)))
    }

    func testDeclineKeepsItsNoteWritesNothingAndRefusesALaterApproval() throws {
        let (s, ada) = try sharedService()
        let r = try s.makeRequest(childId: ada.id, kind: .spend, cents: 999, note: "game")
        let declined = try s.decide(requestId: r.id, approve: false, note: "not today")
        XCTAssertEqual(declined.status, .declined)
        XCTAssertEqual(declined.decisionNote, "not today")
        XCTAssertEqual(declined.decidedBy, "acc-parent")
        XCTAssertNil(try s.store.transaction(id: RequestRecord.paymentId(of: r.id)))
        XCTAssertThrowsError(try s.decide(requestId: r.id, approve: true)) { XCTAssertEqual($0 as? ClientError, .requestDecided("declined")) }
        XCTAssertEqual(try s.store.balance(childId: ada.id), 0)
    }

    func testRequestsRefuseBadAmountsNotesAndUnknownIds() throws {
        let (s, ada) = try sharedService()
        for cents: Int64 in [0, -5, Cents.maxTransactionMagnitude + 1] {
            XCTAssertThrowsError(try s.makeRequest(childId: ada.id, kind: .spend, cents: cents, note: "")) {
                guard case .invalid(field: "amount", _)? = $0 as? ClientError else { return XCTFail("\($0)") }
            }
        }
        XCTAssertThrowsError(try s.makeRequest(childId: ada.id, kind: .chore, cents: 1, note: String(repeating: "x", count: 501)))
        XCTAssertThrowsError(try s.makeRequest(childId: UUID().lowercased, kind: .chore, cents: 1, note: "")) {
            guard case .childNotFound? = $0 as? ClientError else { return XCTFail("\($0)") }
        }
        XCTAssertThrowsError(try s.decide(requestId: UUID().lowercased, approve: true)) {
            guard case .requestNotFound? = $0 as? ClientError else { return XCTFail("\($0)") }
        }
        let r = try s.makeRequest(childId: ada.id, kind: .chore, cents: 5, note: "")
        XCTAssertThrowsError(try s.decide(requestId: r.id, approve: true, cents: 0))
        XCTAssertEqual(try s.store.request(id: r.id)?.status, .pending, "a refused approval leaves the request pending")
        XCTAssertEqual(try s.store.counts().transactions, 0)
    }

    func testFreshIdsKeepEachPaymentTheIdOfItsRequestAndAnExportCarriesRequests() throws {
        let s = LedgerService(store: try LedgerStore(path: ":memory:"))
        let ada = try s.addChild(name: "Ada")
        let chore = try s.makeRequest(childId: ada.id, kind: .chore, cents: 300, note: "car")
        try s.decide(requestId: chore.id, approve: true, cents: 250)
        let spend = try s.makeRequest(childId: ada.id, kind: .spend, cents: 100, note: "sweets")
        try s.decide(requestId: spend.id, approve: false, note: "no")
        try s.makeRequest(childId: ada.id, kind: .spend, cents: 50, note: "gum")

        let path = directory.appendingPathComponent("export.json.gz").path
        try LedgerExporter(store: s.store).export(to: path, now: 1)
        let copy = LedgerService(store: try LedgerStore(path: ":memory:"))
        try LedgerExporter(store: copy.store).importFile(path, now: 2)
        XCTAssertEqual(try copy.store.requests().map(\.id), try s.store.requests().map(\.id))
        XCTAssertEqual(try copy.store.request(id: chore.id)?.amountCents, 250)
        XCTAssertEqual(try copy.store.request(id: chore.id)?.requestedCents, 300)
        XCTAssertEqual(try copy.store.request(id: spend.id)?.decisionNote, "no")
        XCTAssertEqual(try copy.store.balance(childId: ada.id), 250)

        try s.store.transaction { try s.store.rekeyLedger(requeue: true) }
        let requests = try s.store.requests()
        XCTAssertEqual(requests.count, 3)
        XCTAssertTrue(Set(requests.map(\.id)).isDisjoint(with: [chore.id, spend.id]), "fresh ids")
        let approved = try XCTUnwrap(requests.first { $0.status == .approved })
        XCTAssertEqual(approved.paymentId, RequestRecord.paymentId(of: approved.id))
        let payment = try XCTUnwrap(s.store.transaction(id: RequestRecord.paymentId(of: approved.id)))
        XCTAssertEqual(payment.amountCents, 250)
        XCTAssertEqual(payment.childId, approved.childId)
        XCTAssertNil(try s.store.transaction(id: RequestRecord.paymentId(of: chore.id)), "the old payment id is gone")
        XCTAssertEqual(Set(requests.map(\.childId)), [try XCTUnwrap(s.store.children().first?.id)])
        let queue = try s.store.pendingBatch(limit: 100).map(\.kind)
        XCTAssertEqual(queue.filter { $0 == .request }.count, 3)
        XCTAssertLessThan(try XCTUnwrap(queue.lastIndex(of: .request)), try XCTUnwrap(queue.firstIndex(of: .transaction)),
                          "requests go up before the transactions")
    }

    // MARK: The merge rule

    private func wire(_ r: RequestRecord, status: String, cents: Int64? = nil, tag: String = "t9") -> Wire.Request {
        var w = Wire.Request(r)
        w.status = status
        w.amountCents = cents ?? r.amountCents
        w.decidedBy = status == "pending" ? nil : "acc-other"
        w.decidedAt = status == "pending" ? nil : Timestamp.format(ms: 1_000)
        w.paymentId = status == "approved" ? RequestRecord.paymentId(of: r.id) : nil
        w.changeTag = tag
        w.createdAt = Timestamp.format(ms: r.createdAt)
        return w
    }

    func testADeclineTheServerHoldsBeatsAQueuedApprovalWhosePaymentIsDropped() throws {
        let (s, ada) = try sharedService()
        let r = try s.makeRequest(childId: ada.id, kind: .spend, cents: 450, note: "book")
        try s.decide(requestId: r.id, approve: true)
        let engine = SyncEngine(store: s.store, transport: InMemoryTransport(respond: { _ in InMemoryTransport.Response(status: 503) }))
        XCTAssertEqual(try engine.heldPayments(), [RequestRecord.paymentId(of: r.id)], "the payment waits for its decision")
        XCTAssertTrue(try s.store.transaction { try engine.mergeRequest(wire(r, status: "declined")) })
        let merged = try XCTUnwrap(s.store.request(id: r.id))
        XCTAssertEqual(merged.status, .declined)
        XCTAssertEqual(merged.decidedBy, "acc-other")
        XCTAssertNil(try s.store.pendingVersion(.request, id: r.id))
        XCTAssertNil(try s.store.transaction(id: RequestRecord.paymentId(of: r.id)), "the losing approval's payment is gone")
        XCTAssertNil(try s.store.pendingVersion(.transaction, id: RequestRecord.paymentId(of: r.id)))
        XCTAssertEqual(try s.store.balance(childId: ada.id), 0)
    }

    func testAnApprovalTheServerHoldsKeepsTheSamePaymentIdAndAPendingServerVersionKeepsOurDecision() throws {
        let (s, ada) = try sharedService()
        let engine = SyncEngine(store: s.store, transport: InMemoryTransport(respond: { _ in InMemoryTransport.Response(status: 503) }))
        let a = try s.makeRequest(childId: ada.id, kind: .chore, cents: 300, note: "")
        try s.decide(requestId: a.id, approve: true)
        try s.store.transaction { try engine.mergeRequest(wire(a, status: "approved", cents: 250)) }
        XCTAssertEqual(try s.store.request(id: a.id)?.amountCents, 250, "the server's approval stands")
        XCTAssertNotNil(try s.store.transaction(id: RequestRecord.paymentId(of: a.id)), "same id: the feed brings the server's copy")
        XCTAssertNil(try s.store.pendingVersion(.transaction, id: RequestRecord.paymentId(of: a.id)), "never uploaded")

        let b = try s.makeRequest(childId: ada.id, kind: .spend, cents: 100, note: "")
        try s.decide(requestId: b.id, approve: false, note: "no")
        try s.store.transaction { try engine.mergeRequest(wire(b, status: "pending", tag: "t2")) }
        let kept = try XCTUnwrap(s.store.request(id: b.id))
        XCTAssertEqual(kept.status, .declined, "our decision goes up on top of the pending version")
        XCTAssertEqual(kept.changeTag, "t2")
        XCTAssertNotNil(try s.store.pendingVersion(.request, id: b.id))
    }

    func testAFeedPageCarriesRequestsAndSetsAsideAMalformedOne() throws {
        let page = try FeedPageDecoder.decode(Array("""
            {"children":[],"transactions":[],"requests":[
              {"id":"A1B2C3D4-0000-4000-8000-000000000001","childId":"c1","kind":"chore","amountCents":300,"requestedCents":200,
               "note":"dishes","status":"approved","decidedBy":"p1","decidedAt":"2026-12-01T10:00:00.000Z","decisionNote":null,
               "paymentId":"x","createdBy":null,"createdAt":"2026-12-01T09:00:00.000Z","modifiedAt":"2026-12-01T10:00:00.000Z","changeTag":"7"},
              {"id":"bad","childId":"c1","kind":"chore","status":"pending"}],
             "nextToken":"n","moreComing":false}
            """.utf8))
        XCTAssertEqual(page.requests.count, 1)
        XCTAssertEqual(page.unreadable.map(\.kind), ["request"])
        let r = try XCTUnwrap(page.requests[0].record())
        XCTAssertEqual(r.id, "a1b2c3d4-0000-4000-8000-000000000001")
        XCTAssertEqual(r.amountCents, 300)
        XCTAssertEqual(r.status, .approved)
        XCTAssertEqual(r.decidedAt, Timestamp.parse("2026-12-01T10:00:00.000Z"))
        var unknown = page.requests[0]
        unknown.kind = "allowance"
        XCTAssertNil(unknown.record(), "an unknown kind is not merged")
    }

    // MARK: Child mode

    private func openLedger(_ name: String) async throws -> Ledger {
        try await Ledger.open(store: directory.appendingPathComponent("\(name).store"), server: nil,
                              credentials: FileCredentialStore(directory: directory.appendingPathComponent(name)),
                              transport: nil, options: Ledger.Options())
    }

    func testAChildDeviceOffersOnlyItsChildAndStaysInChildModeWhenReopened() async throws {
        // As `redeemChildCode` leaves a store, with the child's records as its feed brought them
        // (and another child's, which the device must never show).
        let ada = ChildRecord(id: UUID().lowercased, name: "Ada", sortOrder: 0, archived: false, createdAt: 1, modifiedAt: 1, modifiedBy: "p")
        let bo = ChildRecord(id: UUID().lowercased, name: "Bo", sortOrder: 1, archived: false, createdAt: 1, modifiedAt: 1, modifiedBy: "p")
        do {
            let store = try LedgerStore(path: directory.appendingPathComponent("kid.store").path)
            try store.transaction {
                try store.upsert(ada)
                try store.upsert(bo)
                try store.upsert(TransactionRecord(id: UUID().lowercased, childId: ada.id, amountCents: 700, note: "", source: "manual", createdAt: 2))
                try store.set(.childModeChildId, ada.id)
                try store.setPhase(.shared)
            }
        }
        let kid = try await openLedger("kid")
        let mode = await kid.mode
        XCTAssertEqual(mode, .child(ada.id))
        let snap = try await kid.snapshot()
        XCTAssertEqual(snap.mode, .child(ada.id))
        XCTAssertEqual(snap.children.map(\.id), [ada.id], "only the paired child")
        XCTAssertEqual(snap.children.first?.balanceCents, 700)

        let r = try await kid.request(.spend(cents: 450, note: "book"))
        XCTAssertEqual(r.childId, ada.id)
        XCTAssertEqual(r.status, .pending)
        XCTAssertTrue(r.isPending, "queued for upload")
        let pending = try await kid.snapshot().pendingRequests
        XCTAssertEqual(pending, 1)
        let listed = try await kid.requests()
        XCTAssertEqual(listed.map(\.id), [r.id])

        let refused: [(String, () async throws -> Void)] = [
            ("addChild", { _ = try await kid.addChild(named: "Cy") }),
            ("add", { _ = try await kid.add(cents: 100, to: ada.id) }),
            ("take", { _ = try await kid.take(cents: 100, from: ada.id) }),
            ("undo", { _ = try await kid.undoLast(for: ada.id) }),
            ("rename", { _ = try await kid.rename(ada.id, to: "A") }),
            ("addPot", { _ = try await kid.addPot(named: "Save", for: ada.id) }),
            ("approve", { _ = try await kid.approve(r.id) }),
            ("decline", { _ = try await kid.decline(r.id) }),
            ("request for another child", { _ = try await kid.request(.chore(cents: 1, note: ""), for: bo.id) }),
            ("history of another child", { _ = try await kid.history(of: bo.id) }),
            ("pots of another child", { _ = try await kid.pots(of: bo.id) }),
            ("schedules of another child", { _ = try await kid.schedules(for: bo.id) }),
            ("requests of another child", { _ = try await kid.requests(of: bo.id) }),
            ("pairChildDevice", { _ = try await kid.pairChildDevice(ada.id) }),
            ("enableSharing", { try await kid.enableSharing() }),
            ("createLinkCode", { _ = try await kid.createLinkCode() }),
            ("signIn", { try await kid.signIn(token: "kl_x") }),
            ("redeem", { _ = try await kid.redeem(linkCode: "ABCD-EFGH-JKLM") }),
        ]
        for (name, call) in refused {
            do {
                try await call()
                XCTFail("\(name) was allowed on a child's device")
            } catch let error as LedgerError {
                guard case .notAllowed = error else { XCTFail("\(name): \(error)"); continue }
            }
        }
        let history = try await kid.history(of: ada.id)
        XCTAssertEqual(history.items.count, 1, "its own child's history reads")
        let balance = try await kid.snapshot().children.first?.balanceCents
        XCTAssertEqual(balance, 700, "nothing refused left a trace")
    }

    func testAParentsLedgerCannotBePairedToAChildAndAsksForTheChild() async throws {
        let parent = try await openLedger("parent")
        let ada = try await parent.addChild(named: "Ada")
        do {
            try await parent.redeemChildCode("ABCD-EFGH-JKLM")
            XCTFail("a ledger with records was paired")
        } catch LedgerError.notAllowed {}
        do {
            _ = try await parent.request(.spend(cents: 1, note: ""))
            XCTFail("a parent's request without a child")
        } catch LedgerError.invalidInput(field: "child", _) {}
        let r = try await parent.request(.chore(cents: 250, note: "bins"), for: ada.id)
        XCTAssertFalse(r.isPending, "a local-only ledger queues nothing")
        let approved = try await parent.approve(r.id)
        XCTAssertEqual(approved.paymentId, RequestRecord.paymentId(of: r.id))
        let snap = try await parent.snapshot()
        XCTAssertEqual(snap.mode, .parent)
        XCTAssertEqual(snap.children.first?.balanceCents, 250)
        XCTAssertEqual(snap.pendingRequests, 0)
    }
}
