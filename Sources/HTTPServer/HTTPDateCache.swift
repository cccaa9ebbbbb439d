import ByteWriting
import Glibc

/// The IMF-fixdate for the `Date` header, formatted at most once per second, and the
/// `Date` and `Server` lines every response carries, prebuilt with it.
struct HTTPDateCache {
    private var second: Int = -1
    private(set) var bytes: [UInt8] = []
    /// `Date: <bytes>\r\nServer: <name>\r\n`.
    private(set) var fields: [UInt8] = []
    private let serverName: [UInt8]

    private static let days: [StaticString] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months: [StaticString] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    init(serverName: [UInt8]) {
        self.serverName = serverName
    }

    /// Refreshes the cached value if the wall-clock second changed.
    mutating func refresh() {
        var t = time(nil)
        if Int(t) == second { return }
        second = Int(t)
        bytes = Self.format(&t)
        fields = Array("Date: ".utf8) + bytes + [13, 10] + Array("Server: ".utf8) + serverName + [13, 10]
    }

    static func format(_ t: inout time_t) -> [UInt8] {
        var tm = tm()
        gmtime_r(&t, &tm)
        var out: [UInt8] = []
        out.reserveCapacity(29)
        func two(_ n: Int32) {
            out.append(UInt8(48 + n / 10))
            out.append(UInt8(48 + n % 10))
        }
        out.append(literal: days[Int(tm.tm_wday) % 7])
        out.append(contentsOf: [44, 32]) // ", "
        two(tm.tm_mday)
        out.append(32)
        out.append(literal: months[Int(tm.tm_mon) % 12])
        out.append(32)
        let year = Int(tm.tm_year) + 1900
        out.append(contentsOf: Array(String(year).utf8))
        out.append(32)
        two(tm.tm_hour); out.append(58)
        two(tm.tm_min); out.append(58)
        two(tm.tm_sec)
        out.append(literal: " GMT")
        return out
    }
}
