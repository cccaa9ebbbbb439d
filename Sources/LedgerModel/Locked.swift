import Foundation

/// A value guarded by a lock, for state several threads share: the device SDK's transports
/// (`Synchronization.Mutex` needs macOS 15 / iOS 18; this builds on every supported
/// platform) and, in the server, state that many request threads take turns on. On Linux a
/// contended `Mutex` spins and then queues on a priority-inheritance futex that hands the
/// lock to the next waiter, which must first be scheduled: with more request threads than
/// cores, the others spin behind a lock no running thread holds. `NSLock` (a plain pthread
/// mutex) lets whichever thread runs take it.
package final class Locked<Value>: @unchecked Sendable {
    @usableFromInline let lock = NSLock()
    @usableFromInline var value: Value

    package init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value. Inlinable, so callers in other
    /// modules may specialise it; the optimiser does not always (see `ReadCache`).
    @inlinable
    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
