import Foundation
@testable import LedgerClient
import LedgerClientTesting
import LedgerModel
import LedgerServer
import XCTest

/// The randomized convergence test against the real server: three phones over `URLSession`
/// make seeded random edits while randomly offline, a fault-injecting transport loses requests
/// and responses, and the server is stopped and restarted on the same data directory twice.
/// Afterwards every replica equals the server, pots and their balances included.
final class ServerConvergenceTests: XCTestCase {
    private var directory: String!
    private var app: LedgerApp?
    private var port = 0

    override func setUpWithError() throws {
        directory = try LoopbackServer.makeDirectory("kidledger-conv")
        try startServer()
    }

    override func tearDown() {
        app?.stop()
        app = nil
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    /// Starts the server on the data directory; after the first start, on the same port.
    private func startServer() throws {
        let started = try LoopbackServer.start(in: directory, port: port)
        app = started
        port = started.port
    }

    private func stopServer() {
        app?.stop()
        app = nil
    }

    func testRandomEditsOfflineFaultsAndServerRestartsConverge() throws {
        for seed in UInt64(1)...UInt64(4) { if seed > 1 { tearDown(); port = 0; try setUpWithError() }; try run(seed: seed) }
    }

    private func run(seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let base = "http://127.0.0.1:\(port)"
        let phones = try (0..<3).map { i -> EndToEndTests.Phone in
            let phone = try EndToEndTests.Phone(path: directory + "/phone\(i).sqlite", base: base)
            phone.engine.retry = RetryPolicy(maxAttempts: 3, sleep: { _ in })
            return phone
        }
        // A ledger built offline, then shared; the others join.
        let owner = phones[0]
        let ann = try owner.service.addChild(name: "Ann")
        try owner.service.addMoney(childId: ann.id, cents: 1_000)
        for (i, p) in phones.enumerated() { try p.signup("parent\(i)") }
        try ShareFlow(engine: owner.engine).enable(name: "Family")
        for p in phones.dropFirst() {
            let invite = try ShareFlow(engine: owner.engine).invite(handle: try XCTUnwrap(p.store.string(.accountHandle)), readOnly: false)
            _ = try JoinFlow(engine: p.engine).join(invitationId: try XCTUnwrap(invite.invitationId), replaceLocal: false)
        }

        var restarts = 0
        for step in 0..<90 {
            if step == 25 || step == 60 { stopServer() }
            if step == 35 || step == 70 { try startServer(); restarts += 1 }
            let p = phones[Int.random(in: 0..<3, using: &rng)]
            let offline = Double.random(in: 0..<1, using: &rng) < 0.3
            p.faults.faults = .init(dropRequest: 0.15, dropResponse: 0.15, offline: offline)
            let skew = Int64.random(in: -3_000...3_000, using: &rng)
            p.service.now = { Timestamp.nowMs() + skew }
            let children = try p.service.children()
            let pick = children.isEmpty ? nil : children[Int.random(in: 0..<children.count, using: &rng)].child
            let roll = Int.random(in: 0..<100, using: &rng)
            let cents = Int64.random(in: 1...5_000, using: &rng)
            do {
                switch (roll, pick) {
                case (0..<6, _): try p.service.addChild(name: "Kid \(step)")
                case (6..<16, let c?): try p.service.renameChild(id: c.id, to: "Name \(step)")
                case (16..<20, let c?): try p.service.setArchived(id: c.id, !c.archived)
                case (20..<48, let c?): try p.service.addMoney(childId: c.id, cents: cents)
                case (48..<62, let c?): try p.service.takeMoney(childId: c.id, cents: cents)
                case (62..<74, let c?): try p.service.undoLast(childId: c.id)
                case (74..<78, let c?): try p.service.addPot(childId: c.id, name: "Pot \(step)")
                case (78..<85, let c?):
                    // A transfer between two pots of the child (its default pot among them).
                    let pots = [LedgerService.defaultPot(of: c.id)] + (try p.store.pots(childId: c.id)).map(\.id)
                    let ids = Array(Set(pots))
                    if ids.count > 1 {
                        let from = ids[Int.random(in: 0..<ids.count, using: &rng)]
                        let to = ids.filter { $0 != from }[Int.random(in: 0..<(ids.count - 1), using: &rng)]
                        try p.service.transfer(cents: cents, from: from, to: to)
                    }
                case (85..<88, let c?):
                    let pots = [LedgerService.defaultPot(of: c.id)] + (try p.store.pots(childId: c.id)).map(\.id)
                    try p.service.editPot(id: pots[Int.random(in: 0..<pots.count, using: &rng)], .init(name: "Renamed \(step)"))
                default: _ = try? p.engine.sync()
                }
            } catch ClientError.nothingToUndo {}
        }
        XCTAssertEqual(restarts, 2)
        XCTAssertNotNil(app)

        for p in phones { p.faults.faults = .init() }
        for _ in 0..<3 { for p in phones { try p.engine.sync() } }

        let api = try owner.api
        let hh = try owner.store.household().id
        let serverChildren = try JSONValue.parse(try api.call("GET", "/v1/households/\(hh)/children?includeArchived=true").body)
        var serverBalances: [String: Int64] = [:]
        for item in serverChildren["items"]?.arrayValue ?? [] {
            serverBalances[try XCTUnwrap(item["id"]?.stringValue).lowercased()] = try XCTUnwrap(item["balanceCents"]?.intValue)
        }
        var serverIds: [String] = []
        var cursor: String?
        repeat {
            var path = "/v1/households/\(hh)/transactions?limit=1000"
            if let cursor { path += "&cursor=\(APIClient.escape(cursor))" }
            let page = try JSONValue.parse(try api.call("GET", path).body)
            serverIds += (page["items"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue?.lowercased() }
            cursor = page["nextCursor"]?.stringValue
        } while cursor != nil

        XCTAssertGreaterThan(serverIds.count, 20, "too few transactions to mean anything")
        XCTAssertEqual(Set(serverIds).count, serverIds.count, "the server holds no duplicate")
        XCTAssertGreaterThan(phones.map { $0.faults.injected.requests + $0.faults.injected.responses }.reduce(0, +), 0)
        let shape: (ChildRecord) -> [String] = { [$0.id, $0.name, String($0.archived), String($0.sortOrder)] }
        for (i, p) in phones.enumerated() {
            XCTAssertEqual(try p.store.pendingCount(), 0, "phone \(i)")
            XCTAssertEqual(try p.store.deferredCount(), 0, "phone \(i)")
            XCTAssertTrue(try p.store.rejectedRecords().isEmpty, "phone \(i)")
            XCTAssertEqual(try p.balances(), serverBalances, "phone \(i)")
            XCTAssertTrue(try p.store.balanceMismatches().isEmpty, "phone \(i): cached balances equal the sums")
            XCTAssertEqual(try p.store.children().map(shape), try owner.store.children().map(shape), "phone \(i)")
            XCTAssertEqual(try p.store.allTransactions().map(\.id).sorted(), serverIds.sorted(), "phone \(i)")
            let reversed = try p.store.allTransactions().compactMap(\.reversesId)
            XCTAssertEqual(Set(reversed).count, reversed.count, "no transaction has two reversals")
            XCTAssertEqual(try p.service.status(), .synced, "phone \(i)")
            let potShape: (PotRecord) -> [String] = { [$0.id, $0.childId, $0.name, String($0.archived)] }
            XCTAssertEqual(try p.store.pots().map(potShape).sorted { $0.lexicographicallyPrecedes($1) },
                           try owner.store.pots().map(potShape).sorted { $0.lexicographicallyPrecedes($1) }, "phone \(i): pots")
        }
        // Every pot's balance on the server is the sum of its transactions on each phone, and
        // a child's pots add up to its balance.
        var potsSeen = 0
        for child in try owner.store.children() {
            let listed = try JSONValue.parse(try api.call("GET", "/v1/households/\(hh)/children/\(child.id)/pots?limit=1000").body)
            let server = Dictionary(uniqueKeysWithValues: (listed["items"]?.arrayValue ?? []).map {
                ($0["id"]!.stringValue!.lowercased(), $0["balanceCents"]!.intValue!)
            })
            potsSeen += server.count
            XCTAssertEqual(server.values.reduce(0, +), serverBalances[child.id], "pots of \(child.id)")
            for (i, p) in phones.enumerated() {
                let local = try p.store.potBalances(childId: child.id, defaultPot: LedgerService.defaultPot(of: child.id))
                for (pot, cents) in server { XCTAssertEqual(local[pot] ?? 0, cents, "phone \(i): pot \(pot)") }
                XCTAssertEqual(Set(local.keys).subtracting(server.keys), [], "phone \(i): money in pots the server lacks")
            }
        }
        XCTAssertGreaterThan(potsSeen, try owner.store.children().count, "no pot besides the default ones")
    }
}
