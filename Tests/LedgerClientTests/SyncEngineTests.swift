import Foundation
@testable import LedgerClient
import LedgerClientTesting
import LedgerModel
import XCTest

/// One simulated phone: its own store, service and engine over a fault-injecting transport.
final class Device {
    let service: LedgerService
    let engine: SyncEngine
    let faults: FaultInjectingTransport
    var store: LedgerStore { service.store }

    init(server: FakeLedgerServer, seed: UInt64 = 1) throws {
        let store = try LedgerStore(path: ":memory:")
        service = LedgerService(store: store)
        faults = FaultInjectingTransport(wrapping: server.transport, seed: seed)
        engine = SyncEngine(store: store, transport: faults, retry: RetryPolicy(maxAttempts: 3, sleep: { _ in }))
    }

    func signup(_ handle: String) throws { try engine.signUpForTests(handle: handle) }

    func balances() throws -> [String: Int64] {
        Dictionary(uniqueKeysWithValues: try service.children().map { ($0.child.id, $0.balanceCents) })
    }
}

final class SyncEngineTests: XCTestCase {
    func makePair() throws -> (FakeLedgerServer, Device, Device, ChildRecord) { try Self.makePair() }

    /// Mom shares a ledger with Ann (10.00) and Dad joins it.
    static func makePair() throws -> (FakeLedgerServer, Device, Device, ChildRecord) {
        let server = FakeLedgerServer()
        let mom = try Device(server: server), dad = try Device(server: server, seed: 2)
        let ann = try mom.service.addChild(name: "Ann")
        try mom.service.addMoney(childId: ann.id, cents: 1000)
        try mom.signup("mom"); try dad.signup("dad")
        XCTAssertEqual(try ShareFlow(engine: mom.engine).preview().transactions, 1)
        try ShareFlow(engine: mom.engine).enable(name: "Smiths")
        let p = try ShareFlow(engine: mom.engine).invite(handle: "dad", readOnly: false)
        _ = try JoinFlow(engine: dad.engine).join(invitationId: p.invitationId!, replaceLocal: false)
        return (server, mom, dad, ann)
    }

    func testShareJoinAndEditBothWays() throws {
        let (server, mom, dad, ann) = try makePair()
        XCTAssertEqual(try dad.balances(), [ann.id: 1000])
        try dad.service.takeMoney(childId: ann.id, cents: 300)
        try mom.service.addMoney(childId: ann.id, cents: 50)
        XCTAssertEqual(try mom.service.status(), .changesPending(1))
        try dad.engine.sync(); try mom.engine.sync(); try dad.engine.sync()
        XCTAssertEqual(try mom.balances(), [ann.id: 750])
        XCTAssertEqual(try dad.balances(), [ann.id: 750])
        XCTAssertEqual(server.balances(try mom.store.household().id), [ann.id: 750])
        XCTAssertEqual(try mom.service.status(), .synced)
    }

    func testJoinRefusedOverDifferentLedgerUnlessReplaced() throws {
        let server = FakeLedgerServer()
        let mom = try Device(server: server), dad = try Device(server: server)
        try mom.signup("mom"); try dad.signup("dad")
        try mom.service.addChild(name: "Ann")
        try ShareFlow(engine: mom.engine).enable()
        try dad.service.addChild(name: "Zed")
        let inv = try ShareFlow(engine: mom.engine).invite(handle: "dad", readOnly: false).invitationId!
        XCTAssertThrowsError(try JoinFlow(engine: dad.engine).join(invitationId: inv, replaceLocal: false)) {
            XCTAssertEqual($0 as? ClientError, .keepLocalLedger(children: 1, transactions: 0))
        }
        let path = NSTemporaryDirectory() + "kl-join-\(UUID().uuidString).json.gz"
        defer { try? FileManager.default.removeItem(atPath: path) }
        let result = try JoinFlow(engine: dad.engine).join(invitationId: inv, replaceLocal: true, exportPath: path)
        XCTAssertEqual(result.exportPath, path)
        XCTAssertTrue(FileManager.default.fileExists(atPath: path))
        XCTAssertEqual(try dad.service.children().map(\.child.name), ["Ann"])
    }

    func testConcurrentUndoConvergesOnOneReversal() throws {
        let (server, mom, dad, ann) = try makePair()
        let r1 = try mom.service.undoLast(childId: ann.id)
        dad.service.now = { Timestamp.nowMs() + 5 }
        let r2 = try dad.service.undoLast(childId: ann.id)
        XCTAssertEqual(r1.id, r2.id)
        try mom.engine.sync(); try dad.engine.sync(); try mom.engine.sync()
        XCTAssertEqual(try mom.store.allTransactions(), try dad.store.allTransactions())
        XCTAssertEqual(try mom.balances(), [ann.id: 0])
        XCTAssertEqual(server.balances(try mom.store.household().id), [ann.id: 0])
    }

    func testRenameRaceLastWriterWins() throws {
        let (_, mom, dad, ann) = try makePair()
        try mom.service.renameChild(id: ann.id, to: "Annie")
        dad.service.now = { Timestamp.nowMs() + 10_000 }
        try dad.service.renameChild(id: ann.id, to: "Anna")
        try mom.engine.sync(); try dad.engine.sync(); try mom.engine.sync()
        XCTAssertEqual(try mom.store.child(id: ann.id)?.name, "Anna")
        XCTAssertEqual(try dad.store.child(id: ann.id)?.name, "Anna")
        // An edit made after seeing the other wins even with a slower clock.
        mom.service.now = { 0 }
        try mom.service.renameChild(id: ann.id, to: "Ann")
        try mom.engine.sync(); try dad.engine.sync()
        XCTAssertEqual(try dad.store.child(id: ann.id)?.name, "Ann")
    }

    func testRevocationFreezesWithoutDeleting() throws {
        let (_, mom, dad, ann) = try makePair()
        _ = try ShareFlow(engine: mom.engine).revoke(handle: "dad")
        try dad.service.addMoney(childId: ann.id, cents: 5)
        XCTAssertThrowsError(try dad.engine.sync()) { XCTAssertEqual($0 as? ClientError, .frozen(.accessRevoked)) }
        XCTAssertEqual(try dad.service.status(), .attentionRequired(.accessRevoked, pending: 1))
        XCTAssertThrowsError(try dad.service.addMoney(childId: ann.id, cents: 5))
        XCTAssertEqual(try dad.balances(), [ann.id: 1005])
    }

    func testTokenExpiredRefetchesAndKeepsPending() throws {
        let (server, mom, dad, ann) = try makePair()
        try dad.service.addMoney(childId: ann.id, cents: 1)
        try dad.store.setAttention(.readOnly)  // hold the push back
        server.expireTokens()
        try dad.store.setAttention(nil)
        try mom.service.addMoney(childId: ann.id, cents: 2)
        try mom.engine.sync()
        try dad.engine.sync()
        XCTAssertEqual(try dad.balances(), [ann.id: 1003])
        try mom.engine.sync()
        XCTAssertEqual(try mom.balances(), [ann.id: 1003])
    }

    func testDeferredTransactionWaitsForItsChild() throws {
        let store = try LedgerStore(path: ":memory:")
        let engine = SyncEngine(store: store, transport: InMemoryTransport({ _ in throw TransportError.timedOut }))
        let hh = try store.household().id
        let childId = UUID().lowercased
        let tx = Wire.Transaction(id: UUID().lowercased, childId: childId, amountCents: 42, createdAt: Timestamp.format(ms: 1))
        let child = Wire.Child(id: childId, name: "Ann", archived: false, createdAt: Timestamp.format(ms: 1),
                               modifiedAt: Timestamp.format(ms: 1), modifiedBy: "x", changeTag: "t1")
        var report = SyncEngine.Report()
        try store.transaction {
            try engine.merge(Wire.ChangesPage(children: [], transactions: [tx], nextToken: "a", moreComing: true), householdId: hh, report: &report)
        }
        XCTAssertEqual(try store.deferredCount(), 1)
        XCTAssertEqual(try store.counts().transactions, 0)
        try store.transaction {
            try engine.merge(Wire.ChangesPage(children: [child], transactions: [], nextToken: "b", moreComing: false), householdId: hh, report: &report)
        }
        XCTAssertEqual(try store.deferredCount(), 0)
        XCTAssertEqual(try store.balance(childId: childId), 42)
    }

    func testOfflineStatusAndTransientRetry() throws {
        let (server, mom, _, ann) = try makePair()
        try mom.service.addMoney(childId: ann.id, cents: 1)
        mom.faults.faults.offline = true
        XCTAssertThrowsError(try mom.engine.sync())
        XCTAssertEqual(try mom.service.status(), .offline(pending: 1))
        mom.faults.faults.offline = false
        server.state.withLock { $0.failNext = [503, 429] }
        try mom.engine.sync()
        XCTAssertEqual(try mom.service.status(), .synced)
    }

    /// A kill at every step of `share enable` resumes without duplicates or a second household.
    func testShareMigrationResumesAfterFailureAtEveryStep() throws {
        for failAfter in 0..<6 {
            let server = FakeLedgerServer()
            let mom = try Device(server: server)
            try mom.signup("mom")
            let ann = try mom.service.addChild(name: "Ann")
            for i in 1...3 { try mom.service.addMoney(childId: ann.id, cents: Int64(i)) }
            try mom.service.undoLast(childId: ann.id)
            // Let `failAfter` requests through, then cut the network mid-migration.
            let counter = Counter()
            let cut = SyncEngine(store: mom.store, transport: InMemoryTransport { req in
                if counter.next() >= failAfter { throw TransportError.unreachable("killed") }
                return try server.handle(req)
            }, retry: .once)
            _ = try? ShareFlow(engine: cut).enable(name: "Smiths")
            try mom.service.addMoney(childId: ann.id, cents: 100)  // an edit made meanwhile
            try mom.engine.sync()
            XCTAssertEqual(try mom.store.phase(), .shared, "failAfter \(failAfter)")
            XCTAssertEqual(server.state.withLock { $0.households.count }, 1)
            XCTAssertEqual(server.balances(try mom.store.household().id), [ann.id: 103], "failAfter \(failAfter)")
            XCTAssertEqual(try mom.service.status(), .synced)
        }
    }
}

final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var value = 0
    func next() -> Int { lock.lock(); defer { lock.unlock() }; value += 1; return value - 1 }
}
