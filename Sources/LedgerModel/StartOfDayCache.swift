import Foundation

/// The first instants of dates already computed (`ScheduleTimeZone.startOfDaySeconds`), by
/// zone name and date. A zone's rules do not change while the process runs (Foundation
/// reads the tz database once), so a remembered instant stays right. Bounded: when it holds
/// `capacity` entries it starts again empty. An `NSLock`, not a `Mutex`: the device SDK
/// builds this target for iOS 17.
final class StartOfDayCache: @unchecked Sendable {
    static let shared = StartOfDayCache()

    private struct Key: Hashable {
        let zone: String
        let day: Int
    }

    private let lock = NSLock()
    private var values: [Key: Int64] = [:]
    let capacity: Int

    init(capacity: Int = 4096) {
        self.capacity = capacity
    }

    /// The value for `zone` and `day`, computed by `compute` (outside the lock) the first time.
    func value(_ zone: String, _ day: Int, _ compute: () -> Int64) -> Int64 {
        let key = Key(zone: zone, day: day)
        lock.lock()
        let known = values[key]
        lock.unlock()
        if let known { return known }
        let computed = compute()
        lock.lock()
        if values.count >= capacity { values.removeAll(keepingCapacity: true) }
        values[key] = computed
        lock.unlock()
        return computed
    }

    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return values.count
    }
}
