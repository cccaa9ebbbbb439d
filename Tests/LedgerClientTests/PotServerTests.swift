import Foundation
@testable import LedgerClient
import LedgerModel
@testable import LedgerServer
import XCTest

/// Pots, goals and transfers against the real server on loopback: what one phone does reaches
/// the server (pots pushed, not held back) and the other phone converges, balances being the
/// sums of the pots everywhere.
final class PotServerTests: XCTestCase {
    private var directory: String!
    private var app: LedgerApp!
    private var opened: [Ledger] = []

    override func setUpWithError() throws {
        directory = try LoopbackServer.makeDirectory("kidledger-pots")
        var c = LedgerAppConfiguration(dataDirectory: directory + "/server", host: "127.0.0.1", port: 0)
        c.logging = false
        c.http.eventLoops = 1
        c.scheduleJobInterval = 0
        app = try LedgerApp(configuration: c)
        try app.start()
    }

    override func tearDown() async throws {
        for ledger in opened { await ledger.stopAutomaticSync() }
        opened = []
        app?.stop()
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    private func device(_ name: String) async throws -> Ledger {
        var options = Ledger.Options()
        options.retry = RetryPolicy(maxAttempts: 2, baseDelay: 0.05, maxDelay: 0.1)
        let dir = URL(fileURLWithPath: directory)
        let ledger = try await Ledger.open(store: dir.appendingPathComponent("\(name).store"),
                                           server: URL(string: "http://127.0.0.1:\(app.port)")!,
                                           credentials: FileCredentialStore(file: dir.appendingPathComponent("\(name).token")),
                                           transport: nil, options: options)
        opened.append(ledger)
        return ledger
    }

    /// What the server holds of a child's pots: id → (name, balance), read in storage.
    private func serverPots(_ household: String, _ child: String, account: String) throws -> [String: (String, Int64)] {
        let page = try app.storage.read { r in
            try r.listPots(household: household, account: account, child: child, after: nil, limit: 100)
        }
        return Dictionary(uniqueKeysWithValues: page.items.map { ($0.id, ($0.name, $0.balanceCents)) })
    }

    func testPotsAndATransferReachTheServerAndTheOtherPhoneConverges() async throws {
        let mum = try await device("mum")
        try await mum.signUp(handle: "mum", displayName: "Mum", deviceName: "Mum's phone")
        let ada = try await mum.addChild(named: "Ada")
        try await mum.enableSharing(householdName: "Family")
        let dad = try await device("dad")
        try await dad.signUp(handle: "dad", displayName: "Dad", deviceName: "Dad's phone")
        _ = try await mum.invite(handle: "dad", permission: .readWrite)
        try await dad.join(try await dad.pendingInvitations()[0].id, replacingLocal: false)

        // Mum, offline: a pot with a goal, money in, a transfer, money straight into the pot.
        let save = try await mum.addPot(named: "Save", for: ada.id, target: 2_000, by: LocalDate(2027, 6, 1))
        let main = try await mum.pots(of: ada.id)[0]
        XCTAssertTrue(main.isDefault)
        _ = try await mum.add(cents: 1_000, to: ada.id)
        let moved = try await mum.move(cents: 300, from: main.id, to: save.id)
        _ = try await mum.add(cents: 100, to: ada.id, pot: save.id)
        let pushed = try await mum.syncNow()
        XCTAssertEqual(pushed.rejected, 0)
        let rejected = try await mum.rejectedChanges()
        XCTAssertEqual(rejected, [])

        // The server holds the pot and both halves of the transfer, in their pots.
        let snapshot = try await mum.snapshot()
        let household = try XCTUnwrap(snapshot.household?.id)
        let account = try XCTUnwrap(try app.storage.read { r in try r.household(id: household) }?.ownerAccountId)
        let held = try serverPots(household, ada.id, account: account)
        XCTAssertEqual(held[save.id]?.0, "Save")
        XCTAssertEqual(held[save.id]?.1, 400)
        XCTAssertEqual(held[main.id]?.1, 700)
        let out = try app.storage.read { r in try r.transaction(household: household, id: moved.out.id) }
        let into = try app.storage.read { r in try r.transaction(household: household, id: moved.in.id) }
        XCTAssertEqual(out?.amountCents, -300)
        XCTAssertNil(out?.potId)
        XCTAssertEqual(into?.potId, save.id)

        // Dad pulls: the same pots, balances and goal.
        _ = try await dad.syncNow()
        let dads = try await dad.pots(of: ada.id)
        let mums = try await mum.pots(of: ada.id)
        XCTAssertEqual(dads, mums)
        let dadsSnapshot = try await dad.snapshot()
        XCTAssertEqual(dads.map(\.balanceCents).reduce(0, +), dadsSnapshot.children.first { $0.id == ada.id }?.balanceCents)
        XCTAssertEqual(dads.map(\.balanceCents).reduce(0, +), 1_100)
        XCTAssertEqual(dads.first { $0.id == save.id }?.targetCents, 2_000)

        // Dad renames the default pot and moves money back; Mum converges.
        _ = try await dad.renamePot(main.id, to: "Spend")
        _ = try await dad.move(cents: 50, from: save.id, to: main.id)
        _ = try await dad.syncNow()
        _ = try await mum.syncNow()
        let after = try await mum.pots(of: ada.id)
        let dadsAfter = try await dad.pots(of: ada.id)
        XCTAssertEqual(after, dadsAfter)
        XCTAssertEqual(after.first { $0.isDefault }?.name, "Spend")
        XCTAssertEqual(after.first { $0.id == save.id }?.balanceCents, 350)
        XCTAssertEqual(try serverPots(household, ada.id, account: account)[main.id]?.0, "Spend")
        XCTAssertEqual(try serverPots(household, ada.id, account: account)[save.id]?.1, 350)
    }
}
