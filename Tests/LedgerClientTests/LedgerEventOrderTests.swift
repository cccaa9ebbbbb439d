import Foundation
@testable import LedgerClient
import LedgerModel
import XCTest

/// `Ledger.events()` hands an app what syncs did in the order it happened.
final class LedgerEventOrderTests: XCTestCase {
    private var server: RestartableServer!
    private var directory: URL { URL(fileURLWithPath: server.directory) }

    override func setUpWithError() throws {
        server = try RestartableServer("kidledger-events")
    }

    override func tearDown() {
        server?.remove()
    }

    /// A burst of refused changes from one push arrives as a burst of `.rejected` events, one per
    /// change, in the order the server answered (the order the changes were made).
    func testABurstOfEventsArrivesInTheOrderItHappened() async throws {
        let store = directory.appendingPathComponent("mum.store")
        let credentials = FileCredentialStore(file: directory.appendingPathComponent("mum.token"))
        let mum = try await Ledger.open(store: store, server: server.url, credentials: credentials,
                                        transport: nil, options: Ledger.Options())
        try await mum.signUp(handle: "mum", displayName: "Mum")
        let ada = try await mum.addChild(named: "Ada")
        try await mum.enableSharing(householdName: "Family")

        // The same store with the phone's clock two days ahead: the server refuses every
        // transaction it stamps (clock_skew), each with its own event.
        var options = Ledger.Options()
        options.clock = { Timestamp.nowMs() + 48 * 3_600_000 }
        let skewed = try await Ledger.open(store: store, server: server.url, credentials: credentials,
                                           transport: nil, options: options)
        let burst = 60  // within the 64 events the stream keeps for a consumer that lags
        let rounds = 15
        let collected = Locked<[String]>([])
        let consumer = Task {
            for await event in skewed.events() {
                guard case .rejected(let change) = event else { continue }
                if collected.withLock({ $0.append(change.id); return $0.count }) == burst * rounds { return }
            }
        }
        var made: [String] = []
        for round in 0..<rounds {
            for i in 0..<burst {
                made.append(try await skewed.add(cents: Int64(i + 1), to: ada.id, note: "round \(round) #\(i)").id)
            }
            let report = try await skewed.syncNow()
            XCTAssertEqual(report.rejected, burst)
            let deadline = Date().addingTimeInterval(10)
            while collected.withLock({ $0.count }) < burst * (round + 1), Date() < deadline {
                try await Task.sleep(nanoseconds: 5_000_000)
            }
        }
        consumer.cancel()
        let seen = collected.withLock { $0 }
        XCTAssertEqual(seen.count, made.count, "one event per refused change")
        XCTAssertEqual(Set(seen), Set(made))
        let misplaced = zip(seen, made).filter { $0 != $1 }.count
        let first = zip(seen, made).enumerated().first { $0.element.0 != $0.element.1 }?.offset
        XCTAssertEqual(misplaced, 0, "events arrive in the order the changes were refused; the first out of place is #\(first ?? -1)")
    }
}
