import LedgerModel

/// A schedule as this device holds it: the synced record (API.md v1.2) and this device's own
/// payer state. Times are milliseconds since the epoch.
struct ScheduleRecord: Sendable, Equatable {
    var id: String
    var childId: String
    var kind: ScheduleKind
    /// What an allowance pays each period; nil for interest.
    var amountCents: Int64?
    /// What interest pays each period, in 1/100 of a percent; nil for an allowance.
    var rateBasisPoints: Int64?
    var cadence: ScheduleCadence
    var firstDate: LocalDate
    /// An IANA name (`ScheduleTimeZone`).
    var timeZone: String
    var endDate: LocalDate?
    var note: String
    var paused: Bool
    /// How each payment is shared across pots; nil: all to the default pot.
    var split: [ScheduleSplit]?
    /// The server's next due date, or this device's when it paid last.
    var nextDueDate: LocalDate?
    /// Removed: pays nothing more; paid periods stay.
    var deleted: Bool
    var createdAt: Int64
    var modifiedAt: Int64
    var modifiedBy: String
    var changeTag: String?
    /// The payer state: the first date the current terms pay from, the last date paid or skipped.
    var termsFrom: LocalDate
    var lastSettled: LocalDate?
    /// The queued version's edit asked for back pay (sent with the push, then forgotten).
    var backPay = false
    /// What the change that returned this record paid, skipped and dropped (never stored).
    var catchUp: ScheduleCatchUp? = nil

    /// The calendar part, nil when the zone is not one this device knows.
    var terms: ScheduleTerms? {
        guard let zone = try? ScheduleTimeZone(identifier: timeZone) else { return nil }
        return ScheduleTerms(firstDate: firstDate, cadence: cadence, timeZone: zone, endDate: endDate, paused: paused || deleted)
    }

    /// The payer state, nil when the zone is not one this device knows.
    var state: ScheduleState? {
        terms.map { ScheduleState(terms: $0, termsFrom: termsFrom, lastSettled: lastSettled) }
    }

    /// The synced fields only (what a push or the feed carries), for comparing versions.
    var syncedContent: [String] {
        [id, childId, kind.rawValue, amountCents.map(String.init) ?? "", rateBasisPoints.map(String.init) ?? "",
         cadence.rawValue, firstDate.description, timeZone, endDate?.description ?? "", note, String(paused),
         split.map { $0.map { "\($0.potId)=\($0.percent)" }.joined(separator: ",") } ?? "", String(deleted)]
    }
}

/// One pot's share of a schedule's payments.
struct ScheduleSplit: Sendable, Equatable, Codable {
    var potId: String
    var percent: Int
}
