import Dispatch
import Synchronization

/// Long-poll waiters, by household and by the token that asked. A parked request holds no
/// thread: it is a closure in this table plus one Dispatch timer. The writer wakes a
/// household's waiters after each durable commit that touched it (a change, a revoked
/// participant, the household deleted); revoking a token wakes the token's waiters. A woken
/// waiter checks its token and access again before it answers.
final class ChangeNotifier: Sendable {
    private struct Waiter: @unchecked Sendable {
        let household: String
        let token: String
        let wake: @Sendable (_ timedOut: Bool) -> Void
        let timer: DispatchSourceTimer
    }
    private struct State {
        var next: UInt64 = 0
        var byHousehold: [String: [UInt64: Waiter]] = [:]
        /// Waiter ids by token id, each with its household.
        var byToken: [String: [UInt64: String]] = [:]
        var count = 0
        var stopped = false

        /// Removes a waiter from both tables.
        mutating func remove(household: String, id: UInt64) -> Waiter? {
            guard let w = byHousehold[household]?.removeValue(forKey: id) else { return nil }
            if byHousehold[household]?.isEmpty == true { byHousehold[household] = nil }
            byToken[w.token]?.removeValue(forKey: id)
            if byToken[w.token]?.isEmpty == true { byToken[w.token] = nil }
            count -= 1
            return w
        }

        /// Removes every waiter and returns them.
        mutating func removeAll() -> [Waiter] {
            let all = byHousehold.values.flatMap { $0.values }
            byHousehold = [:]
            byToken = [:]
            count = 0
            return all
        }
    }
    private let state = Mutex(State())
    private let timerQueue = DispatchQueue(label: "kidledger.longpoll-timers")

    /// Parked requests right now.
    var parked: Int { state.withLock { $0.count } }

    /// Parks `wake` until `household` changes or `token` is revoked (`wake(false)`) or
    /// `seconds` pass (`wake(true)`). Returns the waiter's id, or nil (and does not park)
    /// when the server is shutting down. Exactly one of `wake` and a successful `cancel`
    /// happens.
    func register(household: String, token: String, seconds: Double,
                  wake: @escaping @Sendable (_ timedOut: Bool) -> Void) -> UInt64? {
        // The timer is made only for a waiter that is registered: Dispatch traps when a
        // source that was never resumed is released.
        let registered: (UInt64, DispatchSourceTimer)? = state.withLock { s in
            if s.stopped { return nil }
            s.next += 1
            let id = s.next
            let timer = DispatchSource.makeTimerSource(queue: timerQueue)
            s.byHousehold[household, default: [:]][id] = Waiter(household: household, token: token, wake: wake, timer: timer)
            s.byToken[token, default: [:]][id] = household
            s.count += 1
            return (id, timer)
        }
        guard let (id, timer) = registered else { return nil }
        timer.setEventHandler { [weak self] in
            guard let self, let w = self.state.withLock({ $0.remove(household: household, id: id) }) else { return }
            w.timer.cancel()
            w.wake(true)
        }
        timer.schedule(deadline: .now() + seconds)
        timer.resume()
        return id
    }

    /// Removes a registered waiter without waking it. Returns false when it was already
    /// woken (or timed out), in which case its `wake` runs or has run.
    func cancel(household: String, id: UInt64) -> Bool {
        guard let w = state.withLock({ $0.remove(household: household, id: id) }) else { return false }
        w.timer.cancel()
        return true
    }

    /// Wakes every waiter of the given households.
    func notify(_ households: Set<String>) {
        wakeAll(state.withLock { s in
            var all: [Waiter] = []
            for h in households {
                guard let ws = s.byHousehold[h] else { continue }
                for id in ws.keys { if let w = s.remove(household: h, id: id) { all.append(w) } }
            }
            return all
        }, timedOut: false)
    }

    /// Wakes every waiter parked by one of the given tokens (after they were revoked).
    func notify(tokens: Set<String>) {
        wakeAll(state.withLock { s in
            var all: [Waiter] = []
            for t in tokens {
                guard let ids = s.byToken[t] else { continue }
                for (id, h) in ids { if let w = s.remove(household: h, id: id) { all.append(w) } }
            }
            return all
        }, timedOut: false)
    }

    /// Wakes every parked request (not as timed out: each looks at its household again).
    /// After changes may have gone unannounced, such as while the change bus of several
    /// processes was reconnecting.
    func notifyEveryone() {
        wakeAll(state.withLock { $0.removeAll() }, timedOut: false)
    }

    /// Wakes every parked request now (as timed out) and refuses new ones.
    func shutdown() {
        wakeAll(state.withLock { s in
            s.stopped = true
            return s.removeAll()
        }, timedOut: true)
    }

    private func wakeAll(_ waiters: [Waiter], timedOut: Bool) {
        for w in waiters {
            w.timer.cancel()
            w.wake(timedOut)
        }
    }
}
