import Dispatch
import Synchronization

/// Registrations per client: a token bucket per `ClientKey` (an IPv4 address or IPv6 /64
/// network, so an IPv6 client cannot take a fresh address per account) that holds
/// `perHour` registrations and refills at `perHour` an hour.
final class RegistrationLimiter: Sendable {
    private struct Bucket { var tokens: Double; var at: Double }
    private let buckets = Mutex<[ClientKey: Bucket]>([:])
    let perHour: Int
    /// Most clients remembered at once.
    static let maxBuckets = 100_000
    private let now: @Sendable () -> Double

    /// `perHour` 0: no limit. `now` is a monotonic clock in seconds.
    init(perHour: Int, now: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }) {
        self.perHour = perHour
        self.now = now
    }

    /// How many clients are remembered.
    var bucketCount: Int { buckets.withLock { $0.count } }

    /// Takes one registration for `address`: nil when allowed, else the seconds until one is.
    func take(_ address: String) -> Int? {
        guard perHour > 0 else { return nil }
        let capacity = Double(perHour), rate = capacity / 3600
        let t = now(), key = ClientKey(address)
        return buckets.withLock { b in
            if b.count >= RegistrationLimiter.maxBuckets {
                // Forget the buckets that have filled up again: they would start full anyway.
                // If that frees nothing (a client spread over more networks than this), start
                // over, so the scan runs once per that many new clients, not on every request.
                b = b.filter { $0.value.tokens + (t - $0.value.at) * rate < capacity }
                if b.count >= RegistrationLimiter.maxBuckets / 2 { b.removeAll(keepingCapacity: true) }
            }
            var bucket = b[key] ?? Bucket(tokens: capacity, at: t)
            bucket.tokens = min(capacity, bucket.tokens + (t - bucket.at) * rate)
            bucket.at = t
            defer { b[key] = bucket }
            guard bucket.tokens >= 1 else { return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up))) }
            bucket.tokens -= 1
            return nil
        }
    }
}
