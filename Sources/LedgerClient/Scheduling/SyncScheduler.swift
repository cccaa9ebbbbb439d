/// The automatic-sync policy as a pure state machine: it is fed what happened (with the time,
/// in seconds on any monotonic clock) and answers what to do. The `Ledger` runs the actions;
/// tests drive it with a fake clock.
///
/// Two lanes run side by side: the live lane keeps a long-poll open while automatic sync runs
/// (so other devices' changes arrive at once), and the push lane uploads local changes a short
/// debounce after the last mutation (and fetches what is new). A failure backs off
/// exponentially with jitter before that lane tries again; a success resets the backoff.
package struct SyncScheduler: Sendable {
    package struct Configuration: Sendable, Equatable {
        /// Quiet time after a mutation before the push lane runs.
        package var debounce: Double = 0.02
        /// Longest a stream of mutations can hold a push back.
        package var maxDebounce: Double = 0.5
        /// Seconds each long-poll waits on the server for changes.
        package var longPollSeconds: Int = 30
        /// First backoff delay after a failure, doubled on each further failure.
        package var backoffBase: Double = 0.5
        /// Longest backoff delay.
        package var backoffMax: Double = 60
        package init() {}
    }

    enum Lane: Sendable, Equatable {
        case live
        case push
    }

    enum Action: Sendable, Equatable {
        /// Start a sync on the live lane that long-polls up to `wait` seconds.
        case startLive(wait: Int)
        /// Start a sync on the push lane (upload, then fetch without waiting).
        case startPush
        /// Cancel the syncs in flight (stopping).
        case cancelAll
        /// Call `tick` at this time (replaces any earlier request); nil: no timer needed.
        case wake(at: Double?)
    }

    /// How a lane's sync ended.
    enum Outcome: Sendable, Equatable {
        case success
        /// Network trouble or a server error that may pass: back off and try again.
        case transientFailure
        /// Needs the user (signed out, frozen, refused): stop trying until something changes.
        case permanentFailure
        case cancelled
    }

    let configuration: Configuration
    /// Jitter source in [0, 1): the delay is `base · 2^(n-1) · (0.5 + jitter/2)`.
    private var random: @Sendable () -> Double

    private(set) var running = false
    private(set) var liveInFlight = false
    private(set) var pushInFlight = false
    /// When the live lane may run again (after a failure); nil: at once.
    private(set) var liveNotBefore: Double?
    /// When the push lane should run; nil: nothing to push.
    private(set) var pushDue: Double?
    /// The first mutation not yet covered by a push (bounds the debounce).
    private var firstUnpushedMutation: Double?
    private(set) var liveFailures = 0
    private(set) var pushFailures = 0
    /// After a permanent failure: lanes wait for `start`, a mutation or a notification.
    private(set) var parked = false

    init(configuration: Configuration = Configuration(), random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }) {
        self.configuration = configuration
        self.random = random
    }

    /// The backoff before retry number `failures` (1-based).
    func backoff(_ failures: Int) -> Double {
        let exponent = Double(min(max(failures - 1, 0), 30))
        let capped = min(configuration.backoffMax, configuration.backoffBase * pow2(exponent))
        return capped * (0.5 + random() / 2)
    }

    private func pow2(_ e: Double) -> Double {
        var r = 1.0
        for _ in 0..<Int(e) { r *= 2 }
        return r
    }

    mutating func start(now: Double) -> [Action] {
        running = true
        parked = false
        liveNotBefore = nil
        liveFailures = 0
        return decide(now: now)
    }

    mutating func stop(now: Double) -> [Action] {
        running = false
        pushDue = nil
        firstUnpushedMutation = nil
        liveNotBefore = nil
        var actions: [Action] = []
        if liveInFlight || pushInFlight { actions.append(.cancelAll) }
        actions.append(.wake(at: nil))
        return actions
    }

    /// A local change was written.
    mutating func mutated(now: Double) -> [Action] {
        guard running else { return [] }
        parked = false
        let first = firstUnpushedMutation ?? now
        firstUnpushedMutation = first
        let due = min(now + configuration.debounce, first + configuration.maxDebounce)
        // While the push lane backs off, a mutation does not cut the wait short.
        pushDue = pushFailures > 0 ? max(due, pushDue ?? due) : due
        return decide(now: now)
    }

    /// A push notification said something changed: fetch now.
    mutating func remoteNotification(now: Double) -> [Action] {
        guard running else { return [] }
        parked = false
        pushDue = now
        return decide(now: now)
    }

    /// Another ledger on the same file recorded that it could not reach the server. While both
    /// lanes here are healthy, check for ourselves at once (a success records `synced` again);
    /// after a failure of our own, our backoff stands, so two failing ledgers never ping-pong.
    mutating func outsideFailure(now: Double) -> [Action] {
        guard running, !parked, pushFailures == 0, liveFailures == 0 else { return [] }
        pushDue = min(pushDue ?? now, now)
        return decide(now: now)
    }

    /// A timer asked for earlier fired.
    mutating func tick(now: Double) -> [Action] {
        decide(now: now)
    }

    mutating func finished(_ lane: Lane, _ outcome: Outcome, now: Double) -> [Action] {
        switch lane {
        case .live:
            liveInFlight = false
            switch outcome {
            case .success:
                liveFailures = 0
                liveNotBefore = nil
            case .transientFailure:
                liveFailures += 1
                liveNotBefore = now + backoff(liveFailures)
            case .permanentFailure:
                parked = true
            case .cancelled:
                break
            }
        case .push:
            pushInFlight = false
            switch outcome {
            case .success:
                pushFailures = 0
                // A working push means the server is back: the live lane need not wait.
                if liveFailures > 0 { liveFailures = 0; liveNotBefore = nil }
            case .transientFailure:
                pushFailures += 1
                pushDue = now + backoff(pushFailures)
            case .permanentFailure:
                parked = true
                pushDue = nil
                firstUnpushedMutation = nil
            case .cancelled:
                break
            }
        }
        return decide(now: now)
    }

    private mutating func decide(now: Double) -> [Action] {
        guard running else { return [] }
        var actions: [Action] = []
        if !parked, !pushInFlight, let due = pushDue, due <= now {
            pushDue = nil
            firstUnpushedMutation = nil
            pushInFlight = true
            actions.append(.startPush)
        }
        if !parked, !liveInFlight, (liveNotBefore ?? now) <= now {
            liveNotBefore = nil
            liveInFlight = true
            actions.append(.startLive(wait: configuration.longPollSeconds))
        }
        var next: Double?
        if !parked {
            if !pushInFlight, let due = pushDue { next = due }
            if !liveInFlight, let at = liveNotBefore { next = min(next ?? at, at) }
        }
        actions.append(.wake(at: next))
        return actions
    }
}
