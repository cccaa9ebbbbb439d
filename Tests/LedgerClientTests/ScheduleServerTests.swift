import Foundation
@testable import LedgerClient
import LedgerModel
@testable import LedgerServer
import XCTest

/// Allowance against the real server on loopback, every payer on one moved clock: two phones
/// offline paying the same periods and the server's job paying them too, then syncing.
final class ScheduleServerTests: XCTestCase {
    private var directory: String!
    private var app: LedgerApp!
    private var opened: [Ledger] = []
    private let clock = Locked<Int64>(0)

    override func setUpWithError() throws {
        try at("2026-01-05T12:00:00.000Z")
        directory = try LoopbackServer.makeDirectory("kidledger-schedules")
        var c = LedgerAppConfiguration(dataDirectory: directory + "/server", host: "127.0.0.1", port: 0)
        c.logging = false
        c.http.eventLoops = 1
        c.scheduleJobInterval = 0
        c.clock = { [clock] in clock.withLock { $0 } }
        app = try LedgerApp(configuration: c)
        try app.start()
    }

    override func tearDown() async throws {
        for ledger in opened { await ledger.stopAutomaticSync() }
        opened = []
        app?.stop()
        if let directory { try? FileManager.default.removeItem(atPath: directory) }
    }

    private func at(_ text: String) throws {
        let ms = try XCTUnwrap(Timestamp.parse(text), text)
        clock.withLock { $0 = ms }
    }

    private func device(_ name: String) async throws -> Ledger {
        var options = Ledger.Options()
        options.clock = { [clock] in clock.withLock { $0 } }
        options.retry = RetryPolicy(maxAttempts: 2, baseDelay: 0.05, maxDelay: 0.1)
        let dir = URL(fileURLWithPath: directory)
        let ledger = try await Ledger.open(store: dir.appendingPathComponent("\(name).store"),
                                           server: URL(string: "http://127.0.0.1:\(app.port)")!,
                                           credentials: FileCredentialStore(file: dir.appendingPathComponent("\(name).token")),
                                           transport: nil, options: options)
        opened.append(ledger)
        return ledger
    }

    private func allowanceIds(_ ledger: Ledger, _ child: String) async throws -> [String] {
        try await ledger.history(of: child, limit: 1000).items.filter { $0.source == .allowance && $0.reversesId == nil }.map(\.id).sorted()
    }

    /// Mum's shared ledger with Ada, and Dad joined to it.
    private func family() async throws -> (mum: Ledger, dad: Ledger, ada: String) {
        let mum = try await device("mum")
        try await mum.signUp(handle: "mum", displayName: "Mum", deviceName: "Mum's phone")
        let ada = try await mum.addChild(named: "Ada")
        try await mum.enableSharing(householdName: "Family")
        let dad = try await device("dad")
        try await dad.signUp(handle: "dad", displayName: "Dad", deviceName: "Dad's phone")
        _ = try await mum.invite(handle: "dad", permission: .readWrite)
        let invitation = try await dad.pendingInvitations()[0]
        try await dad.join(invitation.id, replacingLocal: false)
        return (mum, dad, ada.id)
    }

    func testTwoOfflinePhonesAndTheServerPayEachPeriodOnce() async throws {
        let (mum, dad, adaId) = try await family()
        let ada = try await mum.snapshot().children.first { $0.id == adaId }!

        let utc = try XCTUnwrap(TimeZone(identifier: "UTC"))
        let schedule = try await mum.addSchedule(.allowance(cents: 500, every: .weekly, firstDate: LocalDate(2026, 1, 8), timeZone: utc),
                                                 for: ada.id, note: "pocket money")
        try await mum.syncNow()
        try await dad.syncNow()
        let dads = try await dad.schedules(for: ada.id)
        XCTAssertEqual(dads.map(\.id), [schedule.id])
        XCTAssertEqual(dads.first?.nextDueDate, LocalDate(2026, 1, 8))

        // Three weeks and a day later, both phones offline: each pays 01-08 … 01-29 itself, and
        // the server's job pays them too.
        try at("2026-01-29T12:00:00.000Z")
        let mumSnap = try await mum.snapshot(), dadSnap = try await dad.snapshot()
        XCTAssertEqual(mumSnap.children[0].balanceCents, 2_000)
        XCTAssertEqual(dadSnap.children[0].balanceCents, 2_000)
        _ = app.scheduleJob.run()

        try await mum.syncNow(); try await dad.syncNow(); try await mum.syncNow()
        let expected = [LocalDate(2026, 1, 8), LocalDate(2026, 1, 15), LocalDate(2026, 1, 22), LocalDate(2026, 1, 29)].map {
            ScheduleIDs.payment(kind: .allowance, scheduleId: UUID(uuidString: schedule.id)!, date: $0).lowercased
        }.sorted()
        for ledger in [mum, dad] {
            let ids = try await allowanceIds(ledger, ada.id)
            XCTAssertEqual(ids, expected, "each period once")
            let snap = try await ledger.snapshot()
            XCTAssertEqual(snap.children[0].balanceCents, 2_000)
            XCTAssertEqual(snap.rejected, [])
            XCTAssertEqual(snap.status.pendingCount, 0)
            XCTAssertEqual(snap.children[0].nextPayment, NextPayment(date: LocalDate(2026, 2, 5), cents: 500))
        }

        // Undone on Dad's phone: no payer pays that date again.
        let undone = expected[0]
        _ = try await dad.reverse(undone)
        try await dad.syncNow()
        try at("2026-02-05T12:00:00.000Z")
        _ = app.scheduleJob.run()
        try await mum.syncNow(); try await dad.syncNow(); try await mum.syncNow()
        for ledger in [mum, dad] {
            let snap = try await ledger.snapshot()
            XCTAssertEqual(snap.children[0].balanceCents, 2_000, "01-08 undone, 02-05 paid")
            let ids = try await allowanceIds(ledger, ada.id)
            XCTAssertEqual(ids.count, 5)
        }
    }

    /// Pots and transfers reach the server whole, or wait queued (never refused, never half)
    /// while the server does not hold pots; the rest of the queue goes on meanwhile.
    func testTransfersUnderConcurrentWritersArriveWholeOrWait() async throws {
        let (mum, dad, ada) = try await family()
        try await mum.add(cents: 1_000, to: ada)
        try await mum.syncNow()
        try await dad.syncNow()
        let save = try await mum.addPot(named: "Save", for: ada, target: 5_000)
        let main = try await mum.pots(of: ada)[0]
        async let moves: Void = {
            for i in 1...5 { _ = try await mum.move(cents: Int64(10 * i), from: main.id, to: save.id) }
        }()
        async let adds: Void = {
            for _ in 1...5 { _ = try await dad.take(cents: 20, from: ada) }
        }()
        _ = try await (moves, adds)
        try await mum.syncNow(); try await dad.syncNow(); try await mum.syncNow()

        let mumSnap = try await mum.snapshot(), dadSnap = try await dad.snapshot()
        XCTAssertEqual(mumSnap.rejected, [])
        XCTAssertEqual(dadSnap.rejected, [])
        XCTAssertEqual(mumSnap.children[0].balanceCents, 900, "transfers leave the balance as it was")
        XCTAssertEqual(dadSnap.children[0].balanceCents, 900, "everything else reached the other phone")
        XCTAssertEqual(mumSnap.children[0].pots.map(\.balanceCents).reduce(0, +), 900)
        if mumSnap.status.pendingCount == 0 {
            XCTAssertEqual(dadSnap.children[0].pots.map(\.balanceCents), mumSnap.children[0].pots.map(\.balanceCents))
        } else {
            // A server without pots: the pot and its ten transactions wait, whole.
            XCTAssertEqual(mumSnap.status.pendingCount, 11)
            XCTAssertEqual(dadSnap.children[0].pots.map(\.balanceCents), [900])
        }
    }
}
