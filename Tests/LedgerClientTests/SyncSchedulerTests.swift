@testable import LedgerClient
import XCTest

/// The automatic-sync policy driven with a fake clock: nothing here waits.
final class SyncSchedulerTests: XCTestCase {
    private func scheduler(jitter: Double = 1) -> SyncScheduler {
        var c = SyncScheduler.Configuration()
        c.debounce = 0.05
        c.maxDebounce = 0.2
        c.longPollSeconds = 30
        c.backoffBase = 1
        c.backoffMax = 8
        return SyncScheduler(configuration: c, random: { jitter })
    }

    func testStartOpensTheLongPollAndAMutationPushesAfterTheDebounce() {
        var s = scheduler()
        XCTAssertEqual(s.start(now: 0), [.startLive(wait: 30), .wake(at: nil)])
        XCTAssertEqual(s.mutated(now: 1), [.wake(at: 1.05)])
        XCTAssertEqual(s.mutated(now: 1.03), [.wake(at: 1.08)], "each mutation restarts the quiet time")
        XCTAssertEqual(s.tick(now: 1.05), [.wake(at: 1.08)], "an early timer does nothing")
        XCTAssertEqual(s.tick(now: 1.08), [.startPush, .wake(at: nil)])
        XCTAssertEqual(s.finished(.push, .success, now: 1.1), [.wake(at: nil)])
        XCTAssertEqual(s.finished(.live, .success, now: 5), [.startLive(wait: 30), .wake(at: nil)], "stays live")
    }

    func testAStreamOfMutationsIsPushedWithinTheMaximumDebounce() {
        var s = scheduler()
        _ = s.start(now: 0)
        var t = 1.0
        var pushedAt: Double?
        while t < 2, pushedAt == nil {
            _ = s.mutated(now: t)
            t += 0.04
            if s.tick(now: t).contains(.startPush) { pushedAt = t }
        }
        XCTAssertEqual(try XCTUnwrap(pushedAt), 1.2, accuracy: 0.041)
    }

    func testMutationsDuringAPushAreUploadedByTheNextOne() {
        var s = scheduler()
        _ = s.start(now: 0)
        _ = s.mutated(now: 1)
        XCTAssertEqual(s.tick(now: 1.05), [.startPush, .wake(at: nil)])
        XCTAssertEqual(s.mutated(now: 1.06), [.wake(at: nil)], "no second push while one is in flight")
        XCTAssertEqual(s.finished(.push, .success, now: 1.2), [.startPush, .wake(at: nil)])
    }

    func testAnotherLedgersFailureMakesAHealthyLedgerCheckButNeverCutsItsOwnBackoff() {
        var s = scheduler()
        _ = s.start(now: 0)
        XCTAssertEqual(s.outsideFailure(now: 1), [.startPush, .wake(at: nil)], "healthy: look for ourselves at once")
        XCTAssertEqual(s.outsideFailure(now: 1.01), [.wake(at: nil)], "one check in flight is enough")
        XCTAssertEqual(s.finished(.push, .transientFailure, now: 1.1), [.wake(at: 2.1)])
        XCTAssertEqual(s.outsideFailure(now: 1.2), [], "after our own failure the backoff stands")
        XCTAssertEqual(s.tick(now: 2.1), [.startPush, .wake(at: nil)])
        XCTAssertEqual(s.finished(.push, .success, now: 2.2), [.wake(at: nil)])
        XCTAssertEqual(s.outsideFailure(now: 3), [.startPush, .wake(at: nil)], "healthy again")
        _ = s.stop(now: 4)
        XCTAssertEqual(s.outsideFailure(now: 5), [], "nothing while stopped")
    }

    func testFailuresBackOffExponentiallyWithJitterAndSuccessResets() {
        var s = scheduler(jitter: 1)
        _ = s.start(now: 0)
        XCTAssertEqual(s.finished(.live, .transientFailure, now: 10), [.wake(at: 11)])
        XCTAssertEqual(s.tick(now: 11), [.startLive(wait: 30), .wake(at: nil)])
        XCTAssertEqual(s.finished(.live, .transientFailure, now: 11), [.wake(at: 13)])
        _ = s.tick(now: 13)
        XCTAssertEqual(s.finished(.live, .transientFailure, now: 13), [.wake(at: 17)])
        _ = s.tick(now: 17)
        XCTAssertEqual(s.finished(.live, .transientFailure, now: 17), [.wake(at: 25)])
        _ = s.tick(now: 25)
        XCTAssertEqual(s.finished(.live, .transientFailure, now: 25), [.wake(at: 33)], "capped at backoffMax")
        _ = s.tick(now: 33)
        XCTAssertEqual(s.finished(.live, .success, now: 34), [.startLive(wait: 30), .wake(at: nil)])
        XCTAssertEqual(s.liveFailures, 0)

        var half = scheduler(jitter: 0)
        _ = half.start(now: 0)
        XCTAssertEqual(half.finished(.live, .transientFailure, now: 10), [.wake(at: 10.5)], "jitter takes off up to half")
    }

    func testAPushThatWorksAgainEndsTheLiveLanesBackoff() {
        var s = scheduler()
        _ = s.start(now: 0)
        _ = s.finished(.live, .transientFailure, now: 1)
        _ = s.finished(.live, .transientFailure, now: 1) // a stale report changes nothing harmful
        _ = s.mutated(now: 2)
        XCTAssertTrue(s.tick(now: 2.05).contains(.startPush))
        XCTAssertEqual(s.finished(.push, .success, now: 2.1), [.startLive(wait: 30), .wake(at: nil)])
    }

    func testAPermanentFailureParksUntilSomethingChanges() {
        var s = scheduler()
        _ = s.start(now: 0)
        XCTAssertEqual(s.finished(.live, .permanentFailure, now: 1), [.wake(at: nil)])
        XCTAssertEqual(s.tick(now: 100), [.wake(at: nil)], "no retries while signed out or frozen")
        XCTAssertEqual(s.mutated(now: 101), [.startLive(wait: 30), .wake(at: 101.05)])
    }

    func testStopCancelsWhatIsInFlightAndIgnoresLaterInput() {
        var s = scheduler()
        _ = s.start(now: 0)
        XCTAssertEqual(s.stop(now: 1), [.cancelAll, .wake(at: nil)])
        XCTAssertEqual(s.mutated(now: 2), [])
        XCTAssertEqual(s.remoteNotification(now: 2), [])
        XCTAssertEqual(s.finished(.live, .cancelled, now: 2), [])
        XCTAssertEqual(s.start(now: 3), [.startLive(wait: 30), .wake(at: nil)])
    }

    func testARemoteNotificationFetchesAtOnce() {
        var s = scheduler()
        _ = s.start(now: 0)
        XCTAssertEqual(s.remoteNotification(now: 5), [.startPush, .wake(at: nil)])
    }
}
