import Foundation
@testable import LedgerClient
import LedgerClientTesting
import LedgerModel
import XCTest

/// Seeded, reproducible: random edits on three devices while randomly offline, lost requests
/// and responses, feed tokens expiring; afterwards every replica equals the server.
final class ConvergenceTests: XCTestCase {
    func testRandomizedConvergence() throws {
        for seed in UInt64(1)...UInt64(5) { try run(seed: seed) }
    }

    func run(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let server = FakeLedgerServer()
        let devices = try (0..<3).map { try Device(server: server, seed: seed &* 31 &+ UInt64($0)) }
        for (i, d) in devices.enumerated() { try d.signup("p\(i)") }
        let owner = devices[0]
        try owner.service.addChild(name: "Ann")
        try ShareFlow(engine: owner.engine).enable(name: "Family")
        for d in devices.dropFirst() {
            let inv = try ShareFlow(engine: owner.engine).invite(handle: try d.store.string(.accountHandle)!, readOnly: false)
            _ = try JoinFlow(engine: d.engine).join(invitationId: inv.invitationId!, replaceLocal: false)
        }
        for step in 0..<150 {
            let d = devices[Int.random(in: 0..<3, using: &rng)]
            d.faults.faults = .init(dropRequest: 0.15, dropResponse: 0.15, offline: Double.random(in: 0..<1, using: &rng) < 0.3)
            d.service.now = { [offset = Int64.random(in: -5_000...5_000, using: &rng)] in Timestamp.nowMs() + offset }
            let children = try d.service.children()
            let roll = Int.random(in: 0..<100, using: &rng)
            do {
                switch roll {
                case 0..<8: try d.service.addChild(name: "Kid \(step)")
                case 8..<18 where !children.isEmpty:
                    try d.service.renameChild(id: children.randomElement(using: &rng)!.child.id, to: "Name \(step)")
                case 18..<22 where !children.isEmpty:
                    let c = children.randomElement(using: &rng)!.child
                    try d.service.setArchived(id: c.id, !c.archived)
                case 22..<50 where !children.isEmpty:
                    try d.service.addMoney(childId: children.randomElement(using: &rng)!.child.id, cents: Int64.random(in: 1...5000, using: &rng))
                case 50..<65 where !children.isEmpty:
                    try d.service.takeMoney(childId: children.randomElement(using: &rng)!.child.id, cents: Int64.random(in: 1...5000, using: &rng))
                case 65..<75 where !children.isEmpty:
                    try d.service.undoLast(childId: children.randomElement(using: &rng)!.child.id)
                case 75..<77:
                    server.expireTokens()
                default:
                    _ = try? d.engine.sync()
                }
            } catch ClientError.nothingToUndo {}
        }
        for d in devices { d.faults.faults = .init() }
        for _ in 0..<3 { for d in devices { try d.engine.sync() } }
        let hh = try owner.store.household().id
        let serverBalances = server.balances(hh)
        let reference = try owner.store.allTransactions().map(\.id).sorted()
        XCTAssertGreaterThan(reference.count, 20, "seed \(seed) made too few transactions to mean anything")
        XCTAssertGreaterThan(devices.map { $0.faults.injected.requests + $0.faults.injected.responses }.reduce(0, +), 0)
        for (i, d) in devices.enumerated() {
            XCTAssertEqual(try d.store.pendingCount(), 0, "seed \(seed) device \(i)")
            XCTAssertEqual(try d.balances(), serverBalances, "seed \(seed) device \(i)")
            XCTAssertEqual(try d.store.children(), try owner.store.children(), "seed \(seed) device \(i)")
            XCTAssertEqual(try d.store.allTransactions().map(\.id).sorted(), reference, "seed \(seed) device \(i)")
            let reversed = try d.store.allTransactions().compactMap(\.reversesId)
            XCTAssertEqual(Set(reversed).count, reversed.count, "no transaction has two reversals")
            XCTAssertTrue(try d.store.rejectedRecords().isEmpty, "seed \(seed) device \(i)")
        }
        XCTAssertEqual(server.state.withLock { $0.households[hh]!.transactions.count }, reference.count, "nothing lost or duplicated")
    }
}
