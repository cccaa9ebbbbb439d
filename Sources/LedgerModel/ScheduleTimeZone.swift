import Foundation

/// A schedule's IANA time zone (`Europe/Zurich`), which turns a local due date into the
/// instant it is due: the first instant of that date on the zone's clocks.
///
/// Accepted names are `UTC` and Area/Location names (`America/Argentina/Buenos_Aires`,
/// `Etc/GMT-5`): components separated by `/`, each beginning with an ASCII capital letter
/// and made of ASCII letters, digits, `_`, `-`, `+` and `.`, and known to Foundation's
/// `TimeZone(identifier:)`. Abbreviations and offsets (`PST`, `EST`, `CET`, `GMT+2`) are
/// refused even where Foundation knows them: they are not zones in every tz database, and
/// some platforms' Foundation looks them up in an abbreviation table first, where `EST` can
/// mean New York's rules instead of the tz database's fixed −05:00 — server and device would
/// then disagree.
///
/// Instants depend on the tz database of the machine; the dates and the payment ids do not.
/// Equal (and hashed) by name; encoded (`Codable`) as the name.
public struct ScheduleTimeZone: Hashable, Sendable, CustomStringConvertible {
    /// The name as given, e.g. `Europe/Zurich`.
    public let identifier: String
    /// Foundation's zone for `identifier`.
    public let timeZone: TimeZone

    /// The zone named `identifier`; throws `ScheduleError.unknownTimeZone` for a name that
    /// is not an accepted IANA name or that Foundation does not know.
    public init(identifier: String) throws(ScheduleError) {
        guard ScheduleTimeZone.hasIANAShape(identifier), let zone = TimeZone(identifier: identifier) else {
            throw .unknownTimeZone(identifier)
        }
        self.identifier = identifier
        self.timeZone = zone
    }

    public var description: String { identifier }

    public static func == (a: ScheduleTimeZone, b: ScheduleTimeZone) -> Bool { a.identifier == b.identifier }
    public func hash(into hasher: inout Hasher) { hasher.combine(identifier) }

    /// Whether `name` is `UTC` or has the shape of an Area/Location name.
    static func hasIANAShape(_ name: String) -> Bool {
        if name == "UTC" { return true }
        let components = name.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard name.utf8.count <= 255, components.count >= 2 else { return false }
        return components.allSatisfy { c in
            guard let first = c.first, (65...90).contains(first) else { return false }
            return c.allSatisfy { b in
                (65...90).contains(b) || (97...122).contains(b) || (48...57).contains(b)
                    || b == UInt8(ascii: "_") || b == UInt8(ascii: "-") || b == UInt8(ascii: "+") || b == UInt8(ascii: ".")
            }
        }
    }

    /// The zone's offset from UTC at `seconds` since the epoch, in seconds.
    func offset(atSeconds seconds: Int64) -> Int64 {
        Int64(timeZone.secondsFromGMT(for: Date(timeIntervalSince1970: Double(seconds))))
    }

    /// The local date on the zone's clocks at `ms` (milliseconds since the epoch), clamped to
    /// 0001-01-01…9999-12-31.
    public func localDate(atMs ms: Int64) -> LocalDate {
        let (seconds, _) = Timestamp.floorDiv(ms, 1000)
        let (days, _) = Timestamp.floorDiv(seconds + offset(atSeconds: seconds), 86_400)
        let clamped = Swift.min(Swift.max(days, Int64(LocalDate.min.daysSinceEpoch)), Int64(LocalDate.max.daysSinceEpoch))
        return LocalDate(daysSinceEpoch: Int(clamped))!
    }

    /// The first instant of `date` on the zone's clocks, in milliseconds since the epoch: the
    /// instant the clocks read 00:00 of `date`; when they skip 00:00 (a daylight-saving gap at
    /// midnight, as in America/Havana, America/Santiago or Asia/Beirut) the instant they jump
    /// past it; when they read 00:00 twice (a fall-back to midnight, as in America/Havana), the
    /// earlier one. In general: the earliest instant at which the clocks read `date` 00:00 or
    /// later. Later dates never start earlier, and distinct dates start at distinct instants
    /// unless a zone skips a whole day (Pacific/Apia skipped 2011-12-30, which then "starts"
    /// when 2011-12-31 does).
    public func startOfDayMs(_ date: LocalDate) -> Int64 {
        startOfDaySeconds(date) * 1000
    }

    /// `startOfDayMs` in seconds. The offsets come from `TimeZone.secondsFromGMT(for:)`
    /// alone (no `Calendar`, whose handling of skipped times differs across platforms). From
    /// 26 hours before the local midnight read as UTC, stretches of constant offset are walked
    /// in time order: in each the clocks read instant + offset, so they reach the midnight at
    /// midnight − offset, or already read past it when the stretch begins (after a gap); the
    /// first stretch that lasts until then holds the answer. Changes of offset are looked for
    /// in steps of one hour and found to the second by bisection.
    /// Remembered per zone and date (`StartOfDayCache`): the walk asks Foundation for about
    /// thirty offsets, and a catch-up of the schedule job asks for the same few dates of the
    /// same few zones thousands of times.
    func startOfDaySeconds(_ date: LocalDate) -> Int64 {
        StartOfDayCache.shared.value(identifier, date.daysSinceEpoch) { walkToStartOfDaySeconds(date) }
    }

    /// `startOfDaySeconds`, computed.
    func walkToStartOfDaySeconds(_ date: LocalDate) -> Int64 {
        let midnight = Int64(date.daysSinceEpoch) * 86_400
        var start = midnight - 26 * 3_600
        var offset = self.offset(atSeconds: start)
        // Each round passes one change of offset; a day has never seen more than a few.
        for _ in 0..<64 {
            let candidate = Swift.max(start, midnight - offset)
            guard let change = firstChange(after: start, through: candidate, from: offset) else { return candidate }
            start = change
            offset = self.offset(atSeconds: change)
        }
        return midnight - self.offset(atSeconds: midnight)
    }

    /// The first second in (after, through] whose offset differs from `offset` (the offset
    /// at `after`), or nil. Offsets are compared an hour apart, so two changes within an hour
    /// that cancel out are not seen (the tz database has none near a midnight).
    private func firstChange(after: Int64, through: Int64, from offset: Int64) -> Int64? {
        var probe = after
        while probe < through {
            let next = Swift.min(probe + 3_600, through)
            if self.offset(atSeconds: next) != offset {
                var lo = probe, hi = next
                while hi - lo > 1 {
                    let mid = lo + (hi - lo) / 2
                    if self.offset(atSeconds: mid) == offset { lo = mid } else { hi = mid }
                }
                return hi
            }
            probe = next
        }
        return nil
    }
}

extension ScheduleTimeZone: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let name = try container.decode(String.self)
        do { try self.init(identifier: name) } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(identifier)
    }
}
