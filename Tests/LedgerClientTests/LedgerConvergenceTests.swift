import Foundation
@testable import LedgerClient
import LedgerClientTesting
import LedgerServer
import XCTest

/// The seeded convergence test driven through the public `Ledger`: three devices make random
/// edits while randomly offline, a fault-injecting transport loses requests and responses,
/// the server restarts; afterwards every device shows the same children and balances with
/// nothing pending.
final class LedgerConvergenceTests: XCTestCase {
    private var server: RestartableServer!

    override func setUpWithError() throws {
        server = try RestartableServer("kidledger-api-conv")
    }

    override func tearDown() {
        server?.remove()
    }

    func testRandomEditsThroughTheLedgerAPIConverge() async throws {
        for seed in UInt64(1)...UInt64(2) { try await run(seed: seed) }
    }

    private func run(seed: UInt64) async throws {
        var rng = SeededGenerator(seed: seed)
        let directory = URL(fileURLWithPath: server.directory)
        let url = server.url
        var faults: [FaultInjectingTransport] = []
        var devices: [Ledger] = []
        for i in 0..<3 {
            let transport = FaultInjectingTransport(wrapping: URLSessionTransport(baseURL: url), seed: seed * 10 + UInt64(i))
            faults.append(transport)
            devices.append(try await Ledger.open(store: directory.appendingPathComponent("s\(seed)-d\(i).store"), server: url,
                                                 credentials: InMemoryCredentialStore(), transport: transport,
                                                 options: LedgerSyncTests.fast))
        }
        for (i, d) in devices.enumerated() { try await d.signUp(handle: "p\(seed)x\(i)", displayName: "Parent \(i)") }
        let owner = devices[0]
        let ann = try await owner.addChild(named: "Ann")
        try await owner.add(cents: 1_000, to: ann.id)
        try await owner.enableSharing(householdName: "Family \(seed)")
        for (i, d) in devices.enumerated().dropFirst() {
            try await owner.invite(handle: "p\(seed)x\(i)", permission: .readWrite)
            let invitation = try await XCTUnwrapAsync(try await d.pendingInvitations().first)
            try await d.join(invitation.id, replacingLocal: false)
        }

        var restarts = 0
        for step in 0..<70 {
            if step == 20 || step == 45 { server.stop() }
            if step == 28 || step == 53 { try server.start(); restarts += 1 }
            let i = Int.random(in: 0..<3, using: &rng)
            let d = devices[i]
            faults[i].faults = .init(dropRequest: 0.15, dropResponse: 0.15, offline: Double.random(in: 0..<1, using: &rng) < 0.3)
            let children = try await d.snapshot().children
            let pick = children.isEmpty ? nil : children[Int.random(in: 0..<children.count, using: &rng)]
            let roll = Int.random(in: 0..<100, using: &rng)
            let cents = Int64.random(in: 1...5_000, using: &rng)
            do {
                switch (roll, pick) {
                case (0..<6, _): try await d.addChild(named: "Kid \(step)")
                case (6..<14, let c?): try await d.rename(c.id, to: "Name \(step)")
                case (14..<18, let c?): try await d.setArchived(!c.archived, for: c.id)
                case (18..<22, let c?): try await d.move(c.id, toSortOrder: Int64.random(in: 0..<5, using: &rng))
                case (22..<48, let c?): try await d.add(cents: cents, to: c.id, note: "step \(step)")
                case (48..<62, let c?): try await d.take(cents: cents, from: c.id)
                case (62..<74, let c?): try await d.undoLast(for: c.id)
                default: _ = try? await d.syncNow()
                }
            } catch LedgerError.nothingToUndo {}
        }
        XCTAssertEqual(restarts, 2)

        for f in faults { f.faults = .init() }
        for _ in 0..<3 { for d in devices { _ = try await d.syncNow() } }
        let reference = try await owner.snapshot()
        XCTAssertGreaterThan(reference.children.count, 1)
        for (i, d) in devices.enumerated() {
            let snap = try await d.snapshot()
            XCTAssertEqual(snap.children.map { [$0.id, $0.name, "\($0.archived)", "\($0.sortOrder)", "\($0.balanceCents)"] },
                           reference.children.map { [$0.id, $0.name, "\($0.archived)", "\($0.sortOrder)", "\($0.balanceCents)"] },
                           "device \(i), seed \(seed)")
            XCTAssertEqual(snap.status.pendingCount, 0, "device \(i)")
            XCTAssertTrue(snap.rejected.isEmpty, "device \(i): \(snap.rejected)")
            guard case .synced = snap.status else { return XCTFail("device \(i): \(snap.status)") }
        }
        XCTAssertGreaterThan(faults.map { $0.injected.requests + $0.injected.responses }.reduce(0, +), 0)
    }
}

/// `XCTUnwrap` for an async expression.
func XCTUnwrapAsync<T>(_ value: @autoclosure () async throws -> T?, file: StaticString = #filePath, line: UInt = #line) async throws -> T {
    let v = try await value()
    return try XCTUnwrap(v, file: file, line: line)
}
