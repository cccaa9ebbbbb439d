import Glibc

/// The IMF-fixdate for the `Date` header, formatted at most once per second.
struct HTTPDateCache {
    private var second: Int = -1
    private(set) var bytes: [UInt8] = []

    private static let days: [StaticString] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months: [StaticString] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// Refreshes the cached value if the wall-clock second changed.
    mutating func refresh() {
        var t = time(nil)
        if Int(t) == second { return }
        second = Int(t)
        bytes = Self.format(&t)
    }

    static func format(_ t: inout time_t) -> [UInt8] {
        var tm = tm()
        gmtime_r(&t, &tm)
        var out: [UInt8] = []
        out.reserveCapacity(29)
        func append(_ s: StaticString) {
            out.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
        }
        func two(_ n: Int32) {
            out.append(UInt8(48 + n / 10))
            out.append(UInt8(48 + n % 10))
        }
        append(days[Int(tm.tm_wday) % 7])
        out.append(contentsOf: [44, 32]) // ", "
        two(tm.tm_mday)
        out.append(32)
        append(months[Int(tm.tm_mon) % 12])
        out.append(32)
        let year = Int(tm.tm_year) + 1900
        out.append(contentsOf: Array(String(year).utf8))
        out.append(32)
        two(tm.tm_hour); out.append(58)
        two(tm.tm_min); out.append(58)
        two(tm.tm_sec)
        append(" GMT")
        return out
    }
}
