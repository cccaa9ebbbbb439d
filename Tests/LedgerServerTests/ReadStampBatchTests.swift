import Dispatch
import Foundation
import Synchronization
import XCTest
@testable import LedgerCore
@testable import LedgerServer

/// `ReadStampBatch` without a database: requests that block (a worker's) and requests
/// handed over (an event loop's) share reads, each gets its own household's and account's
/// stamp, never one from a read that started before it asked, and each handed-over request
/// is answered exactly once, a failed read included.
final class ReadStampBatchTests: XCTestCase {
    /// Reads counted as they start; a read's stamps carry its number as `seq` and the
    /// household's number as `row`.
    private final class FakeDatabase: Sendable {
        let started = Atomic<Int64>(0)
        let batches = Mutex<[Int]>([])
        let failing = Atomic<Bool>(false)
        struct Down: Error {}

        func read(_ wanted: [(household: String, account: String)]) throws -> [HouseholdReadStamp?] {
            let n = started.wrappingAdd(1, ordering: .sequentiallyConsistent).newValue
            batches.withLock { $0.append(wanted.count) }
            usleep(300)   // a round trip: requests arriving meanwhile wait for the next read
            if failing.load(ordering: .relaxed) { throw Down() }
            var seen = Set<String>()
            for w in wanted { XCTAssertTrue(seen.insert(w.household + " " + w.account).inserted, "asked twice in one read") }
            return wanted.map { w in
                w.household == "missing" ? nil
                    : HouseholdReadStamp(row: Int64(w.household.dropFirst())!, seq: n, incarnation: 1, account: w.account,
                                         access: AccessRecord(ownerAccountId: "owner", everAccepted: false))
            }
        }
    }

    func testBlockedAndHandedOverRequestsShareReadsAndGetFreshStamps() {
        let db = FakeDatabase()
        let batch = ReadStampBatch()
        let problems = Mutex<[String]>([])
        let answered = Atomic<Int>(0)
        let group = DispatchGroup()
        let requests = 400
        // Handed over from one thread (as an event loop does), blocking from others at once.
        DispatchQueue.concurrentPerform(iterations: 5) { lane in
            for i in 0..<(requests / 5) {
                let household = i % 7 == 6 ? "missing" : "h\(i % 3)"
                let account = "a\(i % 2)"
                let before = db.started.load(ordering: .sequentiallyConsistent)
                @Sendable func check(_ outcome: Result<HouseholdReadStamp?, any Error>) {
                    switch outcome {
                    case .failure(let e): problems.withLock { $0.append("failed: \(e)") }
                    case .success(nil):
                        if household != "missing" { problems.withLock { $0.append("no stamp for \(household)") } }
                    case .success(let s?):
                        if s.seq <= before { problems.withLock { $0.append("stamp of read \(s.seq), asked after read \(before) began") } }
                        if s.account != account || "h\(s.row)" != household {
                            problems.withLock { $0.append("\(household)/\(account) got h\(s.row)/\(s.account)") }
                        }
                    }
                }
                if lane == 0 {
                    group.enter()
                    batch.stamp(household: household, account: account, read: db.read,
                                start: { DispatchQueue.global().async(execute: $0) }) { outcome in
                        check(outcome)
                        answered.wrappingAdd(1, ordering: .relaxed)
                        group.leave()
                    }
                } else {
                    check(Result { try batch.stamp(household: household, account: account, read: db.read) })
                }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 30), .success, "every handed-over request is answered")
        XCTAssertEqual(answered.load(ordering: .relaxed), requests / 5, "each exactly once")
        XCTAssertEqual(problems.withLock { $0 }, [])
        let sizes = db.batches.withLock { $0 }
        XCTAssertLessThan(sizes.count, requests, "requests that arrive during a read share the next one")
        XCTAssertGreaterThan(sizes.max() ?? 0, 1)
    }

    func testAFailedReadAnswersItsRequestsAndTheNextReadServes() {
        let db = FakeDatabase()
        let batch = ReadStampBatch()
        db.failing.store(true, ordering: .relaxed)
        let outcomes = Mutex<[Bool]>([])
        let group = DispatchGroup()
        for i in 0..<20 {
            group.enter()
            batch.stamp(household: "h\(i % 4)", account: "a", read: db.read,
                        start: { DispatchQueue.global().async(execute: $0) }) { outcome in
                outcomes.withLock { $0.append((try? outcome.get()) != nil) }
                group.leave()
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 30), .success)
        XCTAssertEqual(outcomes.withLock { $0 }, Array(repeating: false, count: 20))
        XCTAssertThrowsError(try batch.stamp(household: "h1", account: "a", read: db.read))
        db.failing.store(false, ordering: .relaxed)
        XCTAssertEqual(try batch.stamp(household: "h1", account: "a", read: db.read)?.row, 1)
        let done = DispatchSemaphore(value: 0)
        batch.stamp(household: "h2", account: "a", read: db.read, start: { DispatchQueue.global().async(execute: $0) }) { outcome in
            XCTAssertEqual((try? outcome.get())??.row, 2)
            done.signal()
        }
        XCTAssertEqual(done.wait(timeout: .now() + 10), .success)
    }

    /// A reader handed to a worker pool may wait behind requests that block for their
    /// stamps on every thread of that pool: they must not wait for it, but read themselves
    /// (and answer the handed-over requests waiting with them).
    func testABlockedRequestNeverWaitsForAReaderNotYetRunning() {
        let db = FakeDatabase()
        let batch = ReadStampBatch()
        let held = Mutex<[@Sendable () -> Void]>([])
        let answered = DispatchSemaphore(value: 0)
        batch.stamp(household: "h1", account: "a", read: db.read, start: { job in held.withLock { $0.append(job) } }) { outcome in
            XCTAssertEqual((try? outcome.get())??.row, 1)
            answered.signal()
        }
        XCTAssertEqual(held.withLock { $0.count }, 1, "a reader is started for the first handed-over request")
        let returned = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            XCTAssertEqual((try? batch.stamp(household: "h2", account: "a", read: db.read))??.row, 2)
            returned.signal()
        }
        XCTAssertEqual(returned.wait(timeout: .now() + 10), .success, "the blocked request read while the reader was queued")
        XCTAssertEqual(answered.wait(timeout: .now() + 10), .success, "and answered the handed-over one with it")
        // The reader, run late, finds nothing to do; the next handed-over request is read.
        for job in held.withLock({ $0 }) { job() }
        let again = DispatchSemaphore(value: 0)
        batch.stamp(household: "h3", account: "a", read: db.read, start: { DispatchQueue.global().async(execute: $0) }) { outcome in
            XCTAssertEqual((try? outcome.get())??.row, 3)
            again.signal()
        }
        XCTAssertEqual(again.wait(timeout: .now() + 10), .success)
    }
}
