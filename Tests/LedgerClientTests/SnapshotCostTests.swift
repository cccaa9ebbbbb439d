import CSQLite
import Foundation
@testable import LedgerClient
import LedgerModel
import XCTest

/// What `snapshot()` costs in statements: as many for twenty children as for one (one
/// statement per kind of record for every child), none for a kind the replica holds none of,
/// and none to pay allowance when none is due, while what it shows stays right.
final class SnapshotCostTests: XCTestCase {
    private var directory: URL!
    /// The ledgers' clock, in milliseconds since the epoch.
    private let clock = Locked<Int64>(0)
    private let utc = TimeZone(identifier: "UTC")!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("kidledger-snapshot-cost-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        clock.withLock { $0 = Timestamp.parse("2026-12-01T12:00:00.000Z")! }
    }

    override func tearDown() {
        if let directory { try? FileManager.default.removeItem(at: directory) }
    }

    private func open(_ name: String) async throws -> Ledger {
        var options = Ledger.Options()
        options.clock = { [clock] in clock.withLock { $0 } }
        return try await Ledger.open(store: directory.appendingPathComponent("\(name).store"), server: nil,
                                     credentials: FileCredentialStore(directory: directory.appendingPathComponent(name)),
                                     transport: nil, options: options)
    }

    /// A ledger of `count` children; with `everything`, each has a pot with money in it, a
    /// weekly allowance not yet due and a pending request.
    private func family(_ name: String, children count: Int, everything: Bool) async throws -> Ledger {
        let ledger = try await open(name)
        for i in 0..<count {
            let child = try await ledger.addChild(named: "Kid \(i)")
            try await ledger.add(cents: 1_000, to: child.id)
            guard everything else { continue }
            let pot = try await ledger.addPot(named: "Bike", for: child.id, target: 5_000)
            try await ledger.add(cents: 300, to: child.id, pot: pot.id)
            try await ledger.addSchedule(.allowance(cents: 250 + Int64(i), every: .weekly, firstDate: LocalDate(2026, 12, 4), timeZone: utc),
                                         for: child.id)
            _ = try await ledger.request(.spend(cents: 100, note: "book"), for: child.id)
        }
        return ledger
    }

    func testASnapshotRunsAsManyStatementsForTwentyChildrenAsForOne() async throws {
        for everything in [false, true] {
            let one = try await family("one-\(everything)", children: 1, everything: everything)
            let twenty = try await family("twenty-\(everything)", children: 20, everything: everything)
            let (oneSnapshot, oneCount) = try await one.statementsOfSnapshot()
            let (twentySnapshot, twentyCount) = try await twenty.statementsOfSnapshot()
            XCTAssertEqual(oneSnapshot.children.count, 1)
            XCTAssertEqual(twentySnapshot.children.count, 20)
            XCTAssertEqual(oneCount, twentyCount, "everything: \(everything)")
            XCTAssertLessThanOrEqual(twentyCount, everything ? 7 : 4, "everything: \(everything)")
            for (i, child) in twentySnapshot.children.enumerated() {
                XCTAssertEqual(child.balanceCents, everything ? 1_300 : 1_000)
                XCTAssertEqual(child.pots.map(\.balanceCents), everything ? [1_000, 300] : [1_000])
                XCTAssertEqual(child.pots.map(\.name), everything ? ["Main", "Bike"] : ["Main"])
                XCTAssertEqual(child.nextPayment, everything ? NextPayment(date: LocalDate(2026, 12, 4), cents: 250 + Int64(i)) : nil)
            }
            XCTAssertEqual(twentySnapshot.pendingRequests, everything ? 20 : 0)
        }
    }

    func testAKindTheReplicaHoldsNoneOfIsNotRead() async throws {
        let bare = try await family("bare", children: 3, everything: false)
        let full = try await family("full", children: 3, everything: true)
        let (_, bareCount) = try await bare.statementsOfSnapshot()
        let (_, fullCount) = try await full.statementsOfSnapshot()
        // Pots, the money in them and the allowances: one statement each, only when held.
        XCTAssertEqual(fullCount - bareCount, 3)
    }

    func testAllowanceDueIsPaidBeforeTheSnapshotAndNothingIsWrittenOtherwise() async throws {
        let ledger = try await family("due", children: 2, everything: true)
        let (before, first) = try await ledger.statementsOfSnapshot()
        XCTAssertEqual(before.children.map(\.balanceCents), [1_300, 1_300])
        // Nothing due: nothing more than the read, again.
        let (_, again) = try await ledger.statementsOfSnapshot()
        XCTAssertEqual(again, first)
        // The first date begins: the snapshot shows it paid, and the next date.
        clock.withLock { $0 = Timestamp.parse("2026-12-04T00:00:00.000Z")! }
        let paid = try await ledger.snapshot()
        XCTAssertEqual(paid.children.map(\.balanceCents), [1_550, 1_551])
        XCTAssertEqual(paid.children.map(\.nextPayment?.date), [LocalDate(2026, 12, 11), LocalDate(2026, 12, 11)])
        XCTAssertEqual(paid.children.map { $0.pots.first?.balanceCents }, [1_250, 1_251])
        // A schedule added by another ledger on the same file is paid by this one's snapshot.
        let other = try await open("due")
        let third = try await other.addChild(named: "Kid 2")
        try await other.addSchedule(.allowance(cents: 700, every: .weekly, firstDate: LocalDate(2026, 12, 11), timeZone: utc),
                                    for: third.id)
        clock.withLock { $0 = Timestamp.parse("2026-12-11T00:00:00.000Z")! }
        let later = try await ledger.snapshot()
        XCTAssertEqual(later.children.map(\.balanceCents), [1_800, 1_802, 700])
    }
}

extension Ledger {
    /// A snapshot and the statements it ran on this ledger's store (SQLite's trace of each
    /// statement starting, a trigger's not counted).
    fileprivate func statementsOfSnapshot() async throws -> (LedgerSnapshot, Int) {
        let counter = StatementCounter()
        let handle = store.db.handle
        sqlite3_trace_v2(handle, UInt32(SQLITE_TRACE_STMT), { _, context, _, sql in
            // A trigger's statements come as comments ("-- …").
            if let context, let sql, sql.assumingMemoryBound(to: UInt8.self).pointee != UInt8(ascii: "-") {
                Unmanaged<StatementCounter>.fromOpaque(context).takeUnretainedValue().count += 1
            }
            return 0
        }, Unmanaged.passUnretained(counter).toOpaque())
        let taken: LedgerSnapshot
        do { taken = try await snapshot() } catch {
            sqlite3_trace_v2(handle, 0, nil, nil)
            throw error
        }
        sqlite3_trace_v2(handle, 0, nil, nil)
        return (taken, counter.count)
    }
}

private final class StatementCounter {
    var count = 0
}
