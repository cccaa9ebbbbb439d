import Foundation

/// RFC 3339 timestamps as the API writes them: UTC with milliseconds,
/// `2026-12-02T10:19:10.123Z`. Values are milliseconds since 1970-01-01T00:00:00Z.
public enum Timestamp {
    /// Now, in milliseconds since the epoch.
    public static func nowMs() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// Formats milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    public static func format(ms: Int64) -> String {
        let (days, msOfDay) = floorDiv(ms, 86_400_000)
        let (y, m, d) = civil(fromDays: days)
        let h = msOfDay / 3_600_000, mi = (msOfDay / 60_000) % 60, s = (msOfDay / 1000) % 60, f = msOfDay % 1000
        if (0...9999).contains(y) {
            // yyyy-mm-ddThh:mm:ss.fffZ, written digit by digit (this runs for every record served).
            return String(unsafeUninitializedCapacity: 24) { out in
                var o = 0
                func put(_ v: Int64, _ digits: Int) {
                    var v = v
                    for i in stride(from: digits - 1, through: 0, by: -1) {
                        out[o + i] = UInt8(48 + v % 10)
                        v /= 10
                    }
                    o += digits
                }
                func sep(_ c: Unicode.Scalar) { out[o] = UInt8(ascii: c); o += 1 }
                put(y, 4); sep("-"); put(m, 2); sep("-"); put(d, 2); sep("T")
                put(h, 2); sep(":"); put(mi, 2); sep(":"); put(s, 2); sep("."); put(f, 3); sep("Z")
                return o
            }
        }
        func pad(_ v: Int64, _ n: Int) -> String {
            let str = String(v)
            return str.count >= n ? str : String(repeating: "0", count: n - str.count) + str
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(h, 2)):\(pad(mi, 2)):\(pad(s, 2)).\(pad(f, 3))Z"
    }

    /// Parses RFC 3339 (`Z` or `±HH:MM` offset, 0–9 fraction digits, truncated to ms);
    /// nil when malformed or out of range (years 1970…9999).
    public static func parse(_ text: String) -> Int64? {
        let b = Array(text.utf8)
        func num(_ from: Int, _ len: Int) -> Int64? {
            guard from + len <= b.count else { return nil }
            var v: Int64 = 0
            for i in from..<(from + len) {
                guard b[i] >= 48 && b[i] <= 57 else { return nil }
                v = v * 10 + Int64(b[i] - 48)
            }
            return v
        }
        guard b.count >= 20, let y = num(0, 4), b[4] == 45, let mo = num(5, 2), b[7] == 45, let d = num(8, 2),
              b[10] == 84 || b[10] == 116, let h = num(11, 2), b[13] == 58, let mi = num(14, 2), b[16] == 58,
              let s = num(17, 2) else { return nil }
        guard y >= 1970, (1...12).contains(mo), d >= 1, d <= daysIn(month: mo, year: y), h < 24, mi < 60, s < 60 else { return nil }
        var i = 19
        var fracMs: Int64 = 0
        if i < b.count && b[i] == 46 {
            i += 1
            let start = i
            while i < b.count && b[i] >= 48 && b[i] <= 57 { i += 1 }
            let digits = i - start
            guard digits >= 1 && digits <= 9 else { return nil }
            for k in 0..<3 { fracMs = fracMs * 10 + (k < digits ? Int64(b[start + k] - 48) : 0) }
        }
        guard i < b.count else { return nil }
        var offsetMs: Int64 = 0
        if b[i] == 90 || b[i] == 122 {
            i += 1
        } else if b[i] == 43 || b[i] == 45 {
            guard let oh = num(i + 1, 2), i + 3 < b.count, b[i + 3] == 58, let om = num(i + 4, 2), oh < 24, om < 60 else { return nil }
            offsetMs = (oh * 60 + om) * 60_000 * (b[i] == 43 ? 1 : -1)
            i += 6
        } else { return nil }
        guard i == b.count else { return nil }
        let days = daysFromCivil(y, mo, d)
        return days * 86_400_000 + ((h * 60 + mi) * 60 + s) * 1000 + fracMs - offsetMs
    }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    private static func floorDiv(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        var q = a / b, r = a % b
        if r < 0 { q -= 1; r += b }
        return (q, r)
    }

    // Howard Hinnant's civil-from-days algorithms.
    private static func daysFromCivil(_ y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    private static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
        let z = z0 + 719468
        let era = (z >= 0 ? z : z - 146096) / 146097
        let doe = z - era * 146097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365
        let y = yoe + era * 400
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp + (mp < 10 ? 3 : -9)
        return (m <= 2 ? y + 1 : y, m, d)
    }
}
