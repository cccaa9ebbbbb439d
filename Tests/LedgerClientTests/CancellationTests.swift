import Foundation
@testable import LedgerClient
import LedgerClientTesting
import LedgerModel
import LedgerServer
import XCTest

/// A sync stops within a second of its cancellation — in a long-poll, between retries, or
/// between steps — and leaves the store consistent.
final class CancellationTests: XCTestCase {
    /// Cancels `cancellation` after `seconds` on another thread.
    private func cancel(_ cancellation: SyncCancellation, after seconds: Double) {
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: seconds)
            cancellation.cancel()
        }
    }

    func testCancelledLongPollStopsWithinASecondAgainstTheRealServer() throws {
        let directory = try LoopbackServer.makeDirectory("kidledger-cancel")
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let app = try LoopbackServer.start(in: directory)
        defer { app.stop() }
        let phone = try EndToEndTests.Phone(path: directory + "/phone.sqlite", base: "http://127.0.0.1:\(app.port)")
        try phone.signup("mom")
        let ann = try phone.service.addChild(name: "Ann")
        try ShareFlow(engine: phone.engine).enable(name: "Family")
        try phone.service.addMoney(childId: ann.id, cents: 5)
        try phone.engine.sync()
        XCTAssertEqual(try phone.service.status(), .synced)

        let cancellation = SyncCancellation()
        phone.engine.cancellation = cancellation
        cancel(cancellation, after: 0.3)
        let started = Date()
        XCTAssertThrowsError(try phone.engine.sync(wait: 30)) { XCTAssertTrue($0 is CancellationError, "\($0)") }
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertLessThan(elapsed, 1.3, "stopped within a second of the cancellation")
        XCTAssertGreaterThanOrEqual(elapsed, 0.25, "it was waiting in the long-poll")
        XCTAssertEqual(try phone.service.status(), .synced, "a cancellation is not an outage")

        phone.engine.cancellation = nil
        try phone.service.addMoney(childId: ann.id, cents: 7)
        try phone.engine.sync()
        XCTAssertEqual(try phone.balances(), [ann.id: 12])
    }

    func testCancellationCutsTheWaitBetweenRetries() throws {
        let (_, mom, _, ann) = try SyncEngineTests.makePair()
        try mom.service.addMoney(childId: ann.id, cents: 1)
        let engine = SyncEngine(store: mom.store, transport: InMemoryTransport { _ in
            TransportResponse(status: 503, body: Array(#"{"status":503,"code":"internal"}"#.utf8))
        }, retry: RetryPolicy(maxAttempts: 5, baseDelay: 4, maxDelay: 8))
        let cancellation = SyncCancellation()
        engine.cancellation = cancellation
        cancel(cancellation, after: 0.2)
        let started = Date()
        XCTAssertThrowsError(try engine.sync()) { XCTAssertTrue($0 is CancellationError, "\($0)") }
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.0)
        XCTAssertEqual(try mom.store.pendingCount(), 1)
        XCTAssertNotEqual(try mom.store.string(.lastOutcome), "offline")
    }

    func testCancelledAfterThePushReachedTheServerKeepsTheQueueAndConverges() throws {
        let (server, mom, dad, ann) = try SyncEngineTests.makePair()
        try mom.service.addMoney(childId: ann.id, cents: 30)
        let cancellation = SyncCancellation()
        // The push is applied by the server, then the task is cancelled before its answer is used.
        let engine = SyncEngine(store: mom.store, transport: InMemoryTransport { req in
            let response = try server.handle(req)
            if req.method == "POST" { cancellation.cancel() }
            return response
        }, retry: RetryPolicy(maxAttempts: 1, sleep: { _ in }))
        engine.cancellation = cancellation
        XCTAssertThrowsError(try engine.sync()) { XCTAssertTrue($0 is CancellationError, "\($0)") }
        XCTAssertEqual(try mom.store.pendingCount(), 1, "the answer was not applied: the entry stays")
        XCTAssertTrue(try mom.store.balanceMismatches().isEmpty)
        try mom.engine.sync()
        try dad.engine.sync()
        XCTAssertEqual(try mom.store.pendingCount(), 0)
        XCTAssertEqual(server.balances(try mom.store.household().id), [ann.id: 1030])
        XCTAssertEqual(try dad.balances(), [ann.id: 1030])
    }

    func testEveryStepChecksTheCancellation() throws {
        let (_, mom, _, _) = try SyncEngineTests.makePair()
        let cancellation = SyncCancellation()
        cancellation.cancel()
        mom.engine.cancellation = cancellation
        XCTAssertThrowsError(try mom.engine.sync()) { XCTAssertTrue($0 is CancellationError, "\($0)") }
        XCTAssertThrowsError(try mom.engine.retry.run(cancellation: cancellation) { () throws(LedgerClient.APIError) in
            throw LedgerClient.APIError.transport(.unreachable("down"))
        }) { XCTAssertEqual($0 as? LedgerClient.APIError, .transport(.cancelled)) }
    }
}
