import Synchronization

/// A thread-safe slot for one result. The lock lives inside the box (`NSLock` is an
/// object of its own with a heap-allocated mutex: two more allocations per write request).
package final class ResultBox<T>: @unchecked Sendable {
    private let lock = Mutex(())
    private var result: Result<T, Error>?
    package init() {}
    package func set(_ r: Result<T, Error>) { lock.withLock { _ in result = r } }
    package func get() throws -> T { try lock.withLock { _ in result }!.get() }
}
