import Foundation

/// RFC 3339 timestamps as the API writes them: UTC with milliseconds,
/// `2026-12-02T10:19:10.123Z`. Values are milliseconds since 1970-01-01T00:00:00Z.
public enum Timestamp {
    /// Now, in milliseconds since the epoch.
    public static func nowMs() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded(.down)) }

    /// The earliest instant RFC 3339 can write: 0000-01-01T00:00:00.000Z.
    public static let minMs: Int64 = -62_167_219_200_000
    /// The latest instant RFC 3339 can write: 9999-12-31T23:59:59.999Z.
    public static let maxMs: Int64 = 253_402_300_799_999
    /// How far ahead of the server's clock a client's `createdAt` or `modifiedAt` may be:
    /// 24 hours, in milliseconds. Later stamps are refused (`clock_skew`): a device whose
    /// clock runs years ahead would otherwise win every last-writer-wins comparison.
    public static let maxAheadMs: Int64 = 86_400_000

    /// Whether `ms` lies more than `maxAheadMs` after `now`.
    public static func isTooFarAhead(_ ms: Int64, now: Int64 = nowMs()) -> Bool {
        ms > now &+ maxAheadMs
    }

    /// Formats milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`. Instants outside
    /// years 0000…9999 are written as the nearest one inside (RFC 3339 has four-digit years).
    public static func format(ms: Int64) -> String {
        String(unsafeUninitializedCapacity: 24) { write(ms: ms, into: $0) }
    }

    /// Writes the 24 bytes of `format(ms:)` at the start of `out` and returns 24.
    /// The one RFC 3339 writer: every record served goes through it, digit by digit.
    @discardableResult
    public static func write(ms raw: Int64, into out: UnsafeMutableBufferPointer<UInt8>) -> Int {
        precondition(out.count >= 24, "a timestamp takes 24 bytes")
        let ms = min(max(raw, minMs), maxMs)
        let (days, msOfDay) = floorDiv(ms, 86_400_000)
        let (y, m, d) = civil(fromDays: days)
        let o = out.baseAddress!, pairs = digitPairs.utf8Start
        // Two digits at a time from a table (`v` is 0...99).
        func two(_ v: Int64, at i: Int) {
            let pair = pairs + 2 * Int(v)
            o[i] = pair[0]
            o[i + 1] = pair[1]
        }
        let seconds = msOfDay / 1000, fraction = msOfDay % 1000
        two(y / 100, at: 0); two(y % 100, at: 2); o[4] = 45
        two(m, at: 5); o[7] = 45
        two(d, at: 8); o[10] = 84
        two(seconds / 3600, at: 11); o[13] = 58
        two(seconds / 60 % 60, at: 14); o[16] = 58
        two(seconds % 60, at: 17); o[19] = 46
        o[20] = UInt8(truncatingIfNeeded: 48 + fraction / 100)
        two(fraction % 100, at: 21); o[23] = 90
        return 24
    }

    /// "00" to "99": `v`'s two digits at offset 2 * v.
    private static let digitPairs: StaticString = "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"

    /// Parses RFC 3339 (`Z` or `±HH:MM` offset, 0–9 fraction digits, truncated to ms);
    /// nil when malformed or out of range (years 1970…9999, also after applying the offset:
    /// `9999-12-31T23:30:00-01:00` is in year 10000 and refused).
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
        let ms = days * 86_400_000 + ((h * 60 + mi) * 60 + s) * 1000 + fracMs - offsetMs
        return ms <= maxMs ? ms : nil
    }

    static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: return (year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    static func floorDiv(_ a: Int64, _ b: Int64) -> (Int64, Int64) {
        var q = a / b, r = a % b
        if r < 0 { q -= 1; r += b }
        return (q, r)
    }

    // Howard Hinnant's civil-from-days algorithms (proleptic Gregorian; LocalDate uses them too).
    static func daysFromCivil(_ y0: Int64, _ m: Int64, _ d: Int64) -> Int64 {
        let y = m <= 2 ? y0 - 1 : y0
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146097 + doe - 719468
    }

    static func civil(fromDays z0: Int64) -> (Int64, Int64, Int64) {
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

extension ByteWriter {
    /// The 24 bytes of `Timestamp.format(ms:)`.
    public mutating func putTimestamp(ms: Int64) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 24) { ts in
            let n = Timestamp.write(ms: ms, into: ts)
            put(UnsafeBufferPointer(rebasing: ts[0..<n]))
        }
    }
}
