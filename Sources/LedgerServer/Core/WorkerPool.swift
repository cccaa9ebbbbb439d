import Foundation
import LedgerCore
import LedgerModel
import SystemKit

/// A fixed number of threads taking work in arrival order, with a bounded backlog. A slow
/// or unreachable database makes requests wait here (and, past the backlog, refused with
/// 503) instead of making Dispatch start a thread for every blocked request.
final class WorkerPool: RequestWorkers {
    private struct State {
        var jobs: [(@Sendable () -> Void)?] = []
        var head = 0
        var stopped = false
        var count: Int { jobs.count - head }
    }
    /// Taken by every request and every thread of the pool (see `Locked`).
    private let state = Locked(State())
    private let available = DispatchSemaphore(value: 0)
    private let ended = DispatchSemaphore(value: 0)
    let threads: Int
    /// Most jobs waiting for a thread.
    let maxQueued: Int

    init(name: String, threads: Int, maxQueued: Int) {
        precondition(threads >= 1 && maxQueued >= 1)
        self.threads = threads
        self.maxQueued = maxQueued
        for i in 0..<threads {
            let t = Thread { [self] in
                nameCurrentThread("\(name)-\(i)")
                loop()
            }
            t.start()
        }
    }

    /// Jobs waiting for a thread right now.
    var queued: Int { state.withLock { $0.count } }

    func submit(_ work: @escaping @Sendable () -> Void) -> Bool {
        let accepted = state.withLock { s -> Bool in
            guard !s.stopped, s.count < maxQueued else { return false }
            s.jobs.append(work)
            return true
        }
        if accepted { available.signal() }
        return accepted
    }

    /// Runs what is queued, then ends the threads (returns once they have ended).
    func stop() {
        let first = state.withLock { s -> Bool in
            defer { s.stopped = true }
            return !s.stopped
        }
        guard first else { return }
        for _ in 0..<threads { available.signal() }
        for _ in 0..<threads { ended.wait() }
    }

    private func loop() {
        while true {
            available.wait()
            let job = state.withLock { s -> (@Sendable () -> Void)?? in
                guard s.head < s.jobs.count else { return s.stopped ? .some(nil) : nil }
                let j = s.jobs[s.head]
                s.jobs[s.head] = nil
                s.head += 1
                if s.head >= 1024 && s.head * 2 >= s.jobs.count {
                    s.jobs.removeFirst(s.head)
                    s.head = 0
                }
                return .some(j)
            }
            switch job {
            case .some(.some(let work)): work()
            case .some(.none): ended.signal(); return
            case .none: continue
            }
        }
    }
}
