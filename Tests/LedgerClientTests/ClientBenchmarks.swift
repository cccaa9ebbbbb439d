import Foundation
@testable import LedgerClient
import LedgerModel
import XCTest

/// Device-side figures for bench/client.sh, run only when asked: `snapshot()` and a durable
/// local mutation on a replica of 100,000 transactions, and the decoding of a feed page.
/// KIDLEDGER_BENCH_STORE names a replica (bench/client.sh passes the one `kidledger join` just
/// wrote; it is copied, not changed); KIDLEDGER_BENCH=N builds one of N transactions instead.
final class ClientBenchmarks: XCTestCase {
    private func skipUnlessAsked() throws {
        let env = ProcessInfo.processInfo.environment
        guard env["KIDLEDGER_BENCH_STORE"] != nil || env["KIDLEDGER_BENCH"] != nil else {
            throw XCTSkip("benchmark: set KIDLEDGER_BENCH_STORE or KIDLEDGER_BENCH (bench/client.sh)")
        }
    }

    private func replica() throws -> String {
        try skipUnlessAsked()
        let env = ProcessInfo.processInfo.environment
        let path = NSTemporaryDirectory() + "kl-bench-\(UUID().uuidString).store"
        addTeardownBlock { for s in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + s) } }
        if let source = env["KIDLEDGER_BENCH_STORE"] {
            try LedgerStore(path: source).db.backup(to: path)
            return path
        }
        guard let n = env["KIDLEDGER_BENCH"].flatMap(Int.init) else { throw XCTSkip("KIDLEDGER_BENCH is not a number") }
        let store = try LedgerStore(path: path)
        let service = LedgerService(store: store)
        let kids = try (0..<4).map { try service.addChild(name: "Kid \($0)") }
        try store.transaction {
            for i in 0..<n {
                try store.upsert(TransactionRecord(id: UUID().lowercased, childId: kids[i % 4].id, amountCents: 100,
                                                   note: "", source: "manual", createdAt: Int64(i)))
            }
        }
        return path
    }

    private func report(_ what: String, _ samples: [Duration]) {
        let ms = samples.map { Double($0.components.attoseconds) / 1e15 + Double($0.components.seconds) * 1e3 }.sorted()
        let median = ms[ms.count / 2], p90 = ms[ms.count * 9 / 10]
        print("bench: \(what): median \(String(format: "%.3f", median)) ms, p90 \(String(format: "%.3f", p90)) ms (\(ms.count) runs)")
    }

    private func time(_ runs: Int, _ body: () async throws -> Void) async rethrows -> [Duration] {
        let clock = ContinuousClock()
        var samples: [Duration] = []
        for _ in 0..<runs { samples.append(try await clock.measure { try await body() }) }
        return samples
    }

    func testSnapshotAndLocalMutationOnALargeReplica() async throws {
        let path = try replica()
        let transactions = try LedgerStore(path: path).counts().transactions
        let ledger = try await Ledger.open(store: URL(fileURLWithPath: path), server: nil, credentials: InMemoryCredentialStore())
        let first = try await ledger.snapshot().children.first
        let child = try XCTUnwrap(first)
        _ = try await time(20) { _ = try await ledger.snapshot() }
        report("snapshot() on \(transactions) transactions", try await time(200) { _ = try await ledger.snapshot() })
        report("add(cents:to:) durable, on \(transactions) transactions",
               try await time(200) { _ = try await ledger.add(cents: 1, to: child.id) })
        let service = LedgerService(store: try LedgerStore(path: path))
        report("LedgerService.children() (balances from the replica's cache)", try await time(200) { _ = try service.children() })
        report("LedgerService.addMoney durable (no observation)",
               try await time(200) { _ = try service.addMoney(childId: child.id, cents: 1) })
        XCTAssertTrue(try service.store.balanceMismatches().isEmpty)
        // Reference in the same run: what the disk takes to make one small write durable,
        // the floor under any durable mutation.
        let probe = path + "-fsync-probe"
        _ = FileManager.default.createFile(atPath: probe, contents: nil)
        defer { try? FileManager.default.removeItem(atPath: probe) }
        let file = try FileHandle(forWritingTo: URL(fileURLWithPath: probe))
        let page = Data(repeating: 1, count: 4096)
        report("reference: one 4 KiB write + fsync on the same disk", try await time(200) {
            try file.seek(toOffset: 0)
            try file.write(contentsOf: page)
            try file.synchronize()
        })
        try file.close()
    }

    /// A join reads its feed pages with `FeedPageDecoder`, in one pass over the bytes; the
    /// same page through `JSONDecoder` for comparison.
    func testFeedPageDecoding() async throws {
        try skipUnlessAsked()
        let child = UUID().lowercased, author = UUID().lowercased
        let transactions = (0..<1_000).map { (i: Int) -> Wire.Transaction in
            let at = Int64(1_700_000_000_000 + i)
            let note = i % 3 == 0 ? "allowance" : ""
            return Wire.Transaction(id: UUID().lowercased, householdId: nil, childId: child, amountCents: Int64(100 + i),
                                    note: note, source: "manual", createdAt: Timestamp.format(ms: at),
                                    recordedAt: Timestamp.format(ms: at + 500), authorAccountId: author,
                                    reversesId: nil, reversedById: nil)
        }
        let page = Wire.ChangesPage(children: [], transactions: transactions, nextToken: "tok", moreComing: true)
        let bytes = Array(try JSONEncoder().encode(page))
        XCTAssertEqual(try FeedPageDecoder.decode(bytes).transactions, transactions)
        _ = try await time(20) { _ = try FeedPageDecoder.decode(bytes) }
        report("feed page of 1,000 transactions (\(bytes.count / 1024) KiB) decoded by FeedPageDecoder",
               try await time(200) { _ = try FeedPageDecoder.decode(bytes) })
        let data = Data(bytes)
        report("the same page decoded by JSONDecoder", try await time(200) { _ = try JSONDecoder().decode(Wire.ChangesPage.self, from: data) })
    }
}
