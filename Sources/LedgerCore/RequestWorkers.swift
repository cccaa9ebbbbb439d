import Dispatch

/// Where request work that may wait on the database runs, off the event loops.
package protocol RequestWorkers: Sendable {
    /// Runs `work` soon on another thread; false (and `work` never runs) when there is no
    /// room for it.
    func submit(_ work: @escaping @Sendable () -> Void) -> Bool
}

extension RequestWorkers {
    /// Runs `work` soon on another thread: on a worker, or when the backlog is full on a
    /// thread of Dispatch's (for work that must happen, such as answering a woken long-poll).
    package func async(_ work: @escaping @Sendable () -> Void) {
        if !submit(work) { DispatchQueue.global().async(execute: work) }
    }
}

/// Dispatch's concurrent queue, for SQLite: its reads are local and short, so the threads
/// Dispatch adds while some block stay few.
package struct DispatchWorkers: RequestWorkers {
    package let queue: DispatchQueue

    package init(queue: DispatchQueue) {
        self.queue = queue
    }

    package func submit(_ work: @escaping @Sendable () -> Void) -> Bool {
        queue.async(execute: work)
        return true
    }
}
