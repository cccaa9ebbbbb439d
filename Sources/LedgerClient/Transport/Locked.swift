import Foundation

/// A value guarded by a lock, for the few places transports share state across threads.
/// (`Synchronization.Mutex` needs macOS 15 / iOS 18; this builds on every supported platform.)
package final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    package init(_ value: Value) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    package func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
