import Dispatch
import Synchronization

/// Long-poll waiters per household. A parked request holds no thread: it is a closure in
/// this table plus one Dispatch timer; the writer wakes a household's waiters after each
/// durable commit that touched it.
final class ChangeNotifier: Sendable {
    private struct Waiter: @unchecked Sendable {
        let id: UInt64
        let wake: @Sendable (_ timedOut: Bool) -> Void
        let timer: DispatchSourceTimer
    }
    private struct State {
        var next: UInt64 = 0
        var byHousehold: [String: [UInt64: Waiter]] = [:]
        var count = 0
        var stopped = false
    }
    private let state = Mutex(State())
    private let timerQueue = DispatchQueue(label: "kidledger.longpoll-timers")

    /// Parked requests right now.
    var parked: Int { state.withLock { $0.count } }

    /// Parks `wake` until `household` changes (`wake(false)`) or `seconds` pass (`wake(true)`).
    /// Returns false (and does not park) when the server is shutting down.
    func park(household: String, seconds: Double, wake: @escaping @Sendable (_ timedOut: Bool) -> Void) -> Bool {
        register(household: household, seconds: seconds, wake: wake) != nil
    }

    /// Like `park`, but returns the waiter's id (nil when shutting down) so that the caller
    /// can `cancel` it. Exactly one of `wake` and a successful `cancel` happens.
    func register(household: String, seconds: Double, wake: @escaping @Sendable (_ timedOut: Bool) -> Void) -> UInt64? {
        let timer = DispatchSource.makeTimerSource(queue: timerQueue)
        let id: UInt64? = state.withLock { s in
            if s.stopped { return nil }
            s.next += 1
            let id = s.next
            s.byHousehold[household, default: [:]][id] = Waiter(id: id, wake: wake, timer: timer)
            s.count += 1
            return id
        }
        guard let id else { return nil }
        timer.setEventHandler { [weak self] in
            guard let self, let w = self.remove(household: household, id: id) else { return }
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
        guard let w = remove(household: household, id: id) else { return false }
        w.timer.cancel()
        return true
    }

    private func remove(household: String, id: UInt64) -> Waiter? {
        state.withLock { s in
            guard let w = s.byHousehold[household]?.removeValue(forKey: id) else { return nil }
            if s.byHousehold[household]?.isEmpty == true { s.byHousehold[household] = nil }
            s.count -= 1
            return w
        }
    }

    /// Wakes every waiter of the given households.
    func notify(_ households: Set<String>) {
        let woken: [Waiter] = state.withLock { s in
            var all: [Waiter] = []
            for h in households {
                if let ws = s.byHousehold.removeValue(forKey: h) { all.append(contentsOf: ws.values) }
            }
            s.count -= all.count
            return all
        }
        for w in woken {
            w.timer.cancel()
            w.wake(false)
        }
    }

    /// Answers every parked request now (as timed out) and refuses new ones.
    func shutdown() {
        let all: [Waiter] = state.withLock { s in
            s.stopped = true
            let all = s.byHousehold.values.flatMap { $0.values }
            s.byHousehold = [:]
            s.count = 0
            return all
        }
        for w in all {
            w.timer.cancel()
            w.wake(true)
        }
    }
}
