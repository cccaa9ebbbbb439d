import Foundation
import IDTokenKit
import Synchronization
import XCTest

final class InMemoryNonceReplayGuardTests: XCTestCase {
    private final class Clock: Sendable {
        let value = Mutex(Date(timeIntervalSince1970: 1_000))
        var now: Date { value.withLock { $0 } }
        func advance(_ seconds: TimeInterval) { value.withLock { $0 += seconds } }
    }

    func testSecondUseIsRefusedUntilItsTime() {
        let clock = Clock()
        let guardian = InMemoryNonceReplayGuard(now: { clock.now })
        XCTAssertTrue(guardian.consume(nonceHash: "a", until: clock.now.addingTimeInterval(100)))
        XCTAssertFalse(guardian.consume(nonceHash: "a", until: clock.now.addingTimeInterval(100)))
        XCTAssertTrue(guardian.consume(nonceHash: "b", until: clock.now.addingTimeInterval(10)))
        clock.advance(10)
        XCTAssertFalse(guardian.consume(nonceHash: "a", until: clock.now.addingTimeInterval(100)))
        XCTAssertEqual(guardian.count, 1, "b expired and was dropped")
        clock.advance(90)
        XCTAssertTrue(guardian.consume(nonceHash: "a", until: clock.now.addingTimeInterval(100)))
    }

    func testCapacityBoundsMemoryDroppingTheEarliestExpiry() {
        let clock = Clock()
        let guardian = InMemoryNonceReplayGuard(capacity: 3, now: { clock.now })
        for (hash, ttl) in [("x", 30.0), ("y", 10.0), ("z", 20.0)] {
            XCTAssertTrue(guardian.consume(nonceHash: hash, until: clock.now.addingTimeInterval(ttl)))
        }
        XCTAssertTrue(guardian.consume(nonceHash: "w", until: clock.now.addingTimeInterval(40)))
        XCTAssertEqual(guardian.count, 3)
        XCTAssertFalse(guardian.consume(nonceHash: "x", until: clock.now.addingTimeInterval(30)))
        XCTAssertFalse(guardian.consume(nonceHash: "z", until: clock.now.addingTimeInterval(30)))
        XCTAssertTrue(guardian.consume(nonceHash: "y", until: clock.now.addingTimeInterval(10)), "y, closest to expiry, was dropped")
    }

    func testManyEntriesExpireInOrder() {
        let clock = Clock()
        let guardian = InMemoryNonceReplayGuard(capacity: 10_000, now: { clock.now })
        for i in 0..<5_000 {
            XCTAssertTrue(guardian.consume(nonceHash: "n\(i)", until: clock.now.addingTimeInterval(Double((i * 7919) % 5_000) + 1)))
        }
        clock.advance(2_500)
        XCTAssertTrue(guardian.consume(nonceHash: "fresh", until: clock.now.addingTimeInterval(10_000)))
        XCTAssertEqual(guardian.count, 2_501)
    }

    func testConcurrentConsumersAcceptEachNonceOnce() {
        let guardian = InMemoryNonceReplayGuard()
        let accepted = Mutex(0)
        DispatchQueue.concurrentPerform(iterations: 8) { _ in
            for i in 0..<500 where guardian.consume(nonceHash: "n\(i)", until: Date().addingTimeInterval(60)) {
                accepted.withLock { $0 += 1 }
            }
        }
        XCTAssertEqual(accepted.withLock { $0 }, 500)
    }
}
