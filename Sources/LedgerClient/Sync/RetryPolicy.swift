import Foundation

/// Capped exponential backoff with jitter for transient failures (network, 5xx, 429).
package struct RetryPolicy: Sendable {
    /// Tries in all, including the first; default 5.
    package var maxAttempts: Int
    /// Delay before the first retry, in seconds; default 0.25.
    package var baseDelay: Double
    /// Longest single delay, in seconds; default 8. A `Retry-After` is honoured up to this.
    package var maxDelay: Double
    /// How the policy waits; tests replace it so no time passes.
    package var sleep: @Sendable (Double) -> Void

    package init(maxAttempts: Int = 5, baseDelay: Double = 0.25, maxDelay: Double = 8,
                sleep: @escaping @Sendable (Double) -> Void = { Thread.sleep(forTimeInterval: $0) }) {
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
        self.maxDelay = maxDelay
        self.sleep = sleep
    }

    /// One try only: for best-effort syncs that must not hold the caller.
    package static let once = RetryPolicy(maxAttempts: 1)

    /// The delay before retry number `attempt` (1-based): full-jitter between half and all of
    /// `min(maxDelay, baseDelay · 2^(attempt-1))`, or the server's `Retry-After` when given.
    package func delay(attempt: Int, retryAfter: Double?, using rng: inout some RandomNumberGenerator) -> Double {
        if let retryAfter, retryAfter >= 0 { return min(retryAfter, maxDelay) }
        let exponential = min(maxDelay, baseDelay * pow(2, Double(max(0, attempt - 1))))
        return exponential * Double.random(in: 0.5...1.0, using: &rng)
    }

    /// Runs `operation`, retrying transient `APIError`s. With a `cancellation`, the waits between
    /// tries are cut short when it fires (`APIError.transport(.cancelled)`).
    func run<T>(cancellation: SyncCancellation? = nil, _ operation: () throws(APIError) -> T) throws(APIError) -> T {
        var rng = SystemRandomNumberGenerator()
        var attempt = 0
        while true {
            do {
                return try operation()
            } catch {
                attempt += 1
                guard error.isTransient, attempt < maxAttempts else { throw error }
                var retryAfter: Double?
                if case .problem(_, _, _, let seconds, _) = error { retryAfter = seconds }
                try pause(delay(attempt: attempt, retryAfter: retryAfter, using: &rng), cancellation: cancellation)
            }
        }
    }

    /// Waits `seconds`, in slices of at most 50 ms when a cancellation can cut it short.
    func pause(_ seconds: Double, cancellation: SyncCancellation?) throws(APIError) {
        guard let cancellation else { return sleep(seconds) }
        var left = seconds
        while true {
            if cancellation.isCancelled { throw .transport(.cancelled) }
            if left <= 0 { return }
            let slice = min(left, 0.05)
            sleep(slice)
            left -= slice
        }
    }
}
