import Dispatch
import Foundation
import LedgerCore
import LedgerModel
import Synchronization
import SystemKit

/// Sends the wake outbox to the push gateways, on a thread of its own, off every request
/// path: a slow or dead gateway never slows a write.
///
/// A round claims the wakes due (each until a lease ends, so a process that died mid-call
/// leaves its wakes to the next look), starts a gateway call for each (at most
/// ``maxInFlight`` at once), and records each answer when it comes: taken (the device's
/// next wake waits ``minInterval``; a change that came meanwhile is that next wake), a
/// 4xx (dropped, never retried), a 5xx, timeout or connection error (due again after a
/// delay that doubles with each attempt, up to ``retryMax``), `rejected` (the push key is
/// unregistered). Rounds run when a commit queued wakes (``committed(_:)``), when a wake
/// falls due, and at least every ``pollInterval`` seconds.
final class PushWakeSender: Sendable {
    /// Calls in flight at most.
    static let maxInFlight = 64

    let gateways: [String]
    let minInterval: Double
    let retryBase: Double
    let retryMax: Double
    let pollInterval: Double
    /// How long a claimed wake stays taken, in seconds: the call's timeout with room to spare.
    let lease: Double
    let metrics = PushMetrics()
    private let client: any PushGatewayClient
    private let logger: Logger
    private let storage = LateBound<(any LedgerStorage)?>()
    private let wake = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)
    private let state = Mutex<(running: Bool, stopped: Bool, inFlight: Int)>((false, false, 0))
    /// Where answers are recorded (a write each), one after another.
    private let answers = DispatchQueue(label: "kidledger.push-answers")

    init(configuration c: LedgerAppConfiguration, logger: Logger, client: (any PushGatewayClient)? = nil) {
        gateways = c.pushGateways
        minInterval = max(0, c.pushMinInterval)
        retryBase = max(0.001, c.pushRetrySeconds)
        retryMax = max(retryBase, c.pushRetryMaxSeconds)
        pollInterval = max(0.01, c.pushPollSeconds)
        lease = c.pushTimeout * 2 + 1
        self.client = client ?? URLSessionPushGatewayClient(timeout: c.pushTimeout)
        self.logger = logger
    }

    /// Starts the thread over `storage`.
    func start(storage: any LedgerStorage) {
        self.storage.set { storage }
        let begin = state.withLock { s -> Bool in
            guard !s.running, !s.stopped else { return false }
            s.running = true
            return true
        }
        guard begin else { return }
        let thread = Thread { [self] in
            nameCurrentThread("kl-push")
            var wait = 0.0
            while !state.withLock({ $0.stopped }) {
                if wait > 0 { _ = self.wake.wait(timeout: .now() + wait) }
                // Kicks that came meanwhile are this round's.
                while self.wake.wait(timeout: .now()) == .success {}
                wait = runRound()
            }
            finished.signal()
        }
        thread.start()
    }

    /// What a durable commit means to the sender: wakes this process queued are counted and
    /// looked at now; a commit of another process (no writes of ours) may have queued some.
    func committed(_ commit: StorageCommit) {
        if commit.wakesQueued > 0 { metrics.queued(commit.wakesQueued) }
        if commit.wakesQueued > 0 || (commit.writes == 0 && !commit.touched.isEmpty) { wake.signal() }
    }

    /// Ends the thread after its round (calls in flight are answered or time out later;
    /// their wakes are due again when their lease ends).
    func stop() {
        let wasRunning = state.withLock { s -> Bool in
            defer { s.stopped = true }
            return s.running && !s.stopped
        }
        guard wasRunning else { return }
        wake.signal()
        finished.wait()
        answers.sync {}
    }

    /// One round: claims what is due and starts its calls; answers how long to wait before
    /// the next round, in seconds, unless kicked.
    func runRound() -> Double {
        guard let storage = storage.get(nil) else { return pollInterval }
        let room = state.withLock { Self.maxInFlight - $0.inFlight }
        guard room > 0 else { return pollInterval }
        let now = Timestamp.nowMs()
        let until = now + Int64(lease * 1000)
        let claim: PushWakeClaim
        do {
            claim = try storage.writeHere { w in try w.pushWriting().claimPushWakes(now: now, lease: until, limit: room) }
        } catch {
            logger.log(["event": "push_error", "error": .string(String(describing: error))])
            return min(pollInterval, 1)
        }
        if claim.dropped > 0 { metrics.dropped(claim.dropped) }
        for wake in claim.wakes { send(wake, storage: storage) }
        if claim.wakes.count == room { return 0 }
        guard let next = claim.nextDue else { return pollInterval }
        return min(pollInterval, max(0.001, Double(next - Timestamp.nowMs()) / 1000))
    }

    private func send(_ wake: PushWake, storage: any LedgerStorage) {
        guard gateways.contains(wake.registration.gateway), let url = URL(string: wake.registration.gateway) else {
            // Registered with a gateway the operator no longer allows: nothing is sent there.
            logger.log(["event": "push_gateway_not_allowed", "gateway": .string(wake.registration.gateway)])
            record(wake, .refused(status: 0), seconds: 0, storage: storage)
            return
        }
        state.withLock { $0.inFlight += 1 }
        client.notify(url, body: wake.notification.serialized()) { [self] outcome, seconds in
            answers.async { [self] in
                record(wake, outcome, seconds: seconds, storage: storage)
                state.withLock { $0.inFlight -= 1 }
                self.wake.signal()
            }
        }
    }

    /// Writes what became of one call.
    private func record(_ wake: PushWake, _ outcome: PushGatewayOutcome, seconds: Double, storage: any LedgerStorage) {
        let now = Timestamp.nowMs()
        let key = wake.registration.pushKey
        let rejected = if case .accepted(let keys) = outcome { keys.contains(key) } else { false }
        metrics.answered(outcome, rejected: rejected, seconds: seconds)
        let (token, household, seq) = (wake.tokenId, wake.householdId, wake.seq)
        let quiet = now + Int64(minInterval * 1000)
        do {
            switch outcome {
            case .accepted where rejected:
                _ = try storage.writeHere { w in try w.pushWriting().deletePushRegistration(token: token, pushKey: key) }
                logger.log(["event": "push_key_rejected", "token": .string(token)])
            case .accepted:
                try storage.writeHere { w in try w.pushWriting().finishPushWake(token: token, household: household, sentSeq: seq, quietUntil: quiet) }
            case .refused(let status):
                try storage.writeHere { w in try w.pushWriting().finishPushWake(token: token, household: household, sentSeq: seq, quietUntil: quiet) }
                logger.log(["event": "push_refused", "token": .string(token), "status": .int(Int64(status))])
            case .failed(let reason):
                let delay = min(retryMax, retryBase * pow(2, Double(min(wake.attempts, 30))))
                let at = now + Int64(delay * 1000)
                try storage.writeHere { w in try w.pushWriting().postponePushWake(token: token, household: household, to: at) }
                logger.log(["event": "push_retry", "token": .string(token), "error": .string(reason),
                            "attempts": .int(Int64(wake.attempts + 1)), "retryInMs": .int(Int64(delay * 1000))])
            }
        } catch {
            logger.log(["event": "push_error", "error": .string(String(describing: error))])
        }
    }

    /// Wakes in the outbox now (nil when storage cannot say).
    func outboxDepth() -> Int? {
        guard let storage = storage.get(nil) else { return nil }
        return try? storage.read { try $0.pushReading().pushOutboxDepth() }
    }
}
