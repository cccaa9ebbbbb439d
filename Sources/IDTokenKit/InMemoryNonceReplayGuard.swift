import Foundation
import Synchronization

/// A ``NonceReplayGuard`` for one process: a bounded map from nonce hash to expiry.
///
/// Expired entries are dropped as new ones arrive (earliest expiry first). When the guard
/// is full of unexpired entries the one closest to expiry is dropped to make room, so memory
/// stays bounded; entries are only added for fully verified tokens, so filling it takes that
/// many genuine tokens.
public final class InMemoryNonceReplayGuard: NonceReplayGuard {
    private struct State {
        var expiries: [String: Date] = [:]
        /// A binary min-heap of (expiry, hash), one element per entry of `expiries`.
        var heap: [(Date, String)] = []

        mutating func insert(_ hash: String, _ expiry: Date) {
            expiries[hash] = expiry
            heap.append((expiry, hash))
            var child = heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard heap[child].0 < heap[parent].0 else { break }
                heap.swapAt(child, parent)
                child = parent
            }
        }

        /// Drops the entry that expires first.
        mutating func removeFirst() {
            guard let first = heap.first else { return }
            expiries[first.1] = nil
            let last = heap.removeLast()
            guard !heap.isEmpty else { return }
            heap[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1, right = left + 1
                var smallest = parent
                if left < heap.count, heap[left].0 < heap[smallest].0 { smallest = left }
                if right < heap.count, heap[right].0 < heap[smallest].0 { smallest = right }
                guard smallest != parent else { return }
                heap.swapAt(parent, smallest)
                parent = smallest
            }
        }
    }

    /// The most nonces remembered at once (default 100,000).
    public let capacity: Int
    private let now: @Sendable () -> Date
    private let state = Mutex(State())

    /// - Parameters:
    ///   - capacity: the most nonces remembered at once, default 100,000.
    ///   - now: the clock that expires entries, default the system clock.
    public init(capacity: Int = 100_000, now: @escaping @Sendable () -> Date = { Date() }) {
        precondition(capacity > 0, "capacity must be positive")
        self.capacity = capacity
        self.now = now
    }

    public func consume(nonceHash: String, until: Date) -> Bool {
        let now = now()
        return state.withLock { state in
            while let first = state.heap.first, first.0 <= now { state.removeFirst() }
            if state.expiries[nonceHash] != nil { return false }
            if state.expiries.count >= capacity { state.removeFirst() }
            state.insert(nonceHash, until)
            return true
        }
    }

    /// The number of nonces remembered now (expired ones included until the next consume).
    public var count: Int { state.withLock { $0.expiries.count } }
}
