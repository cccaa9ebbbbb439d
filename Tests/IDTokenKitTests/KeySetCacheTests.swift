import Dispatch
import Foundation
import IDTokenKit
import IDTokenKitTesting
import Synchronization
import XCTest

/// Refreshes: when, how often, and that they never hold up keys already known.
final class KeySetCacheTests: XCTestCase {
    func testTwoUnknownKidsWithinAMinuteFetchOnce() {
        let uptime = FakeUptime()
        let fetcher = CountingFetcher(Fixtures.keySet)
        let keys = KeySetCache(location: .file("/k"), fetcher: fetcher, uptime: uptime.clock)
        XCTAssertNotNil(keys.key(for: "rsa-1"), "the first lookup loads the set")
        XCTAssertEqual(fetcher.count, 1)
        uptime.advance(61)
        XCTAssertNil(keys.key(for: "unknown-1"))
        XCTAssertEqual(fetcher.count, 2)
        uptime.advance(30)
        XCTAssertNil(keys.key(for: "unknown-2"))
        XCTAssertNil(keys.key(for: "unknown-1"))
        XCTAssertEqual(fetcher.count, 2, "rate-limited to one fetch a minute")
        uptime.advance(30)
        XCTAssertNil(keys.key(for: "unknown-2"))
        XCTAssertEqual(fetcher.count, 3)
    }

    func testFailedRefreshKeepsTheKeys() {
        let uptime = FakeUptime()
        let fetcher = CountingFetcher(Fixtures.keySet, Array("not json".utf8))
        let results = Mutex<[Bool]>([])
        let keys = KeySetCache(location: .file("/k"), fetcher: fetcher, uptime: uptime.clock) { result in
            results.withLock { $0.append((try? result.get()) != nil) }
        }
        XCTAssertNotNil(keys.key(for: "ec-1"))
        uptime.advance(60)
        XCTAssertNil(keys.key(for: "unknown"))
        XCTAssertEqual(fetcher.count, 2)
        XCTAssertNotNil(keys.key(for: "ec-1"))
        XCTAssertNotNil(keys.status.lastError)
        XCTAssertNotNil(keys.status.loadedAt)
        XCTAssertEqual(results.withLock { $0 }, [true, false])
    }

    func testStaleSetIsRefreshedInTheBackground() {
        let uptime = FakeUptime()
        let next = try! TestSigningKey.p256(keyID: "ec-2")
        let fetcher = CountingFetcher(Fixtures.keySet, TestSigningKey.keySet([next.jwk()]))
        let refreshed = DispatchSemaphore(value: 0)
        let keys = KeySetCache(location: .file("/k"), fetcher: fetcher, maximumAge: 600, uptime: uptime.clock) { _ in
            refreshed.signal()
        }
        XCTAssertNotNil(keys.key(for: "rsa-1"))
        XCTAssertEqual(refreshed.wait(timeout: .now() + 5), .success)
        uptime.advance(601)
        XCTAssertNotNil(keys.key(for: "rsa-1"), "a stale set still answers")
        XCTAssertEqual(refreshed.wait(timeout: .now() + 5), .success)
        XCTAssertEqual(fetcher.count, 2)
        XCTAssertNil(keys.key(for: "rsa-1"), "the refreshed set replaced it")
        XCTAssertNotNil(keys.key(for: "ec-2"))
    }

    func testKnownKidsAnswerWhileARefreshIsBlocked() throws {
        let uptime = FakeUptime()
        let gate = DispatchSemaphore(value: 0)
        let inFetch = DispatchSemaphore(value: 0)
        let blocking = Mutex(false)
        let fetcher = CountingFetcher(Fixtures.keySet) {
            if blocking.withLock({ $0 }) {
                inFetch.signal()
                gate.wait()
            }
        }
        let keys = KeySetCache(location: .file("/k"), fetcher: fetcher, uptime: uptime.clock)
        try keys.load()
        blocking.withLock { $0 = true }
        uptime.advance(60)

        let unknownDone = DispatchSemaphore(value: 0)
        let waiters = Mutex(0)
        for _ in 0..<3 {
            DispatchQueue.global().async {
                _ = keys.key(for: "unknown")
                waiters.withLock { $0 += 1 }
                unknownDone.signal()
            }
        }
        XCTAssertEqual(inFetch.wait(timeout: .now() + 5), .success, "a refresh started")
        // The refresh is stuck; a known kid answers at once, on this thread.
        let started = DispatchTime.now()
        XCTAssertEqual(keys.key(for: "rsa-1")?.keyID, "rsa-1")
        XCTAssertLessThan(DispatchTime.now().uptimeNanoseconds - started.uptimeNanoseconds, 500_000_000)
        let verifier = IDTokenVerifier(provider: Fixtures.provider, keys: keys, replayGuard: InMemoryNonceReplayGuard())
        XCTAssertNoThrow(try verifier.verify(Fixtures.ec.sign(claims: Fixtures.claims()), now: Fixtures.now))
        XCTAssertEqual(waiters.withLock { $0 }, 0, "lookups of the unknown kid wait for the refresh")

        gate.signal()
        for _ in 0..<3 { XCTAssertEqual(unknownDone.wait(timeout: .now() + 5), .success) }
        XCTAssertEqual(fetcher.count, 2, "the waiters shared one refresh")
    }

    func testLoadIgnoresTheRateLimitAndReportsErrors() throws {
        let fetcher = CountingFetcher(Fixtures.keySet, Array("{}".utf8))
        let keys = KeySetCache(location: .file("/k"), fetcher: fetcher)
        XCTAssertEqual(try keys.load().keys.count, 2)
        XCTAssertThrowsError(try keys.load()) { XCTAssertEqual(($0 as? KeySetError)?.message, "the key set has no keys array") }
        XCTAssertEqual(keys.keys.keys.count, 2)
        XCTAssertEqual(fetcher.count, 2)
    }
}
