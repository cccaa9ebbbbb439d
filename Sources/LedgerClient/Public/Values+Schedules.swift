import Foundation
import LedgerModel

/// A date on the calendar, without a time or zone: `LocalDate(2026, 12, 4)`, or
/// `LocalDate("2026-12-04")` for text.
public typealias LocalDate = LedgerModel.LocalDate
/// How often a schedule pays: `weekly`, `everyTwoWeeks`, `monthly`.
public typealias ScheduleCadence = LedgerModel.ScheduleCadence
/// What a schedule pays: a fixed `allowance`, or `interest` on the balance.
public typealias ScheduleKind = LedgerModel.ScheduleKind

extension LocalDate {
    /// The date `year`-`month`-`day` for literals in code; out-of-range parts are clamped
    /// (month to 1…12, day to the month's length, year to 1…9999), so `LocalDate(2027, 2, 31)`
    /// is 2027-02-28. Use `LocalDate(year:month:day:)` to refuse invalid dates instead.
    public init(_ year: Int, _ month: Int, _ day: Int) {
        let y = Swift.min(Swift.max(year, 1), 9999), m = Swift.min(Swift.max(month, 1), 12)
        let d = Swift.min(Swift.max(day, 1), LocalDate.daysIn(month: m, year: y))
        self = LocalDate(year: y, month: m, day: d) ?? .min
    }
}

/// The terms of a new schedule.
public enum NewSchedule: Sendable, Equatable {
    /// `cents` (> 0) every period from `firstDate`, due at 00:00 of each date in `timeZone`
    /// (an IANA zone such as Europe/Zurich, or UTC). A first date in the past pays the periods
    /// already due at once (at most 366).
    case allowance(cents: Int64, every: ScheduleCadence, firstDate: LocalDate, timeZone: TimeZone)
    /// `basisPoints` (1/100 of a percent, 1…10000) of the child's positive balance every period.
    /// The server computes and pays it; this device shows it when it arrives.
    case interest(basisPoints: Int, every: ScheduleCadence, firstDate: LocalDate, timeZone: TimeZone)
}

/// An allowance or interest schedule of a child.
public struct Schedule: Sendable, Equatable, Hashable, Identifiable {
    public var id: String
    public var childId: String
    public var kind: ScheduleKind
    /// What an allowance pays each period; nil for interest.
    public var amountCents: Int64?
    /// Interest per period in 1/100 of a percent; nil for an allowance.
    public var rateBasisPoints: Int?
    public var cadence: ScheduleCadence
    public var firstDate: LocalDate
    /// The IANA name of the zone whose midnights the payments are due at.
    public var timeZone: String
    /// The last date that may be paid, if any.
    public var endDate: LocalDate?
    public var note: String
    public var paused: Bool
    /// The next date it pays; nil while paused, after its end date, or once removed.
    public var nextDueDate: LocalDate?
    /// True while its latest change waits to be uploaded.
    public var isPending: Bool
    /// What the call that returned it did at once (a first date in the past, a pause, a
    /// resume, a removal); nil from reads.
    public var catchUp: ScheduleCatchUp?
}

/// What creating or changing a schedule paid at once: periods `paid` (on this device),
/// `skipped` (held while paused, skipped by a resume without back pay) and `dropped` (older
/// than the latest 366 due at once).
public struct ScheduleCatchUp: Sendable, Equatable, Hashable {
    public var paid: Int
    public var skipped: Int
    public var dropped: Int
}

/// A pot of a child (Spend, Save, Give…) with its balance and goal.
public struct PotSummary: Sendable, Equatable, Hashable, Identifiable {
    public var id: String
    public var childId: String
    public var name: String
    /// True for the child's default pot, where money without a pot goes.
    public var isDefault: Bool
    public var archived: Bool
    public var balanceCents: Int64
    /// The goal's amount, if any.
    public var targetCents: Int64?
    /// The goal's date, if any.
    public var targetDate: LocalDate?
    /// How far the balance is toward the goal, 0…1 (nil without a goal amount).
    public var progress: Double?
}

/// A pot as a mutation returns it.
public typealias Pot = PotSummary

/// The next allowance payment of a child.
public struct NextPayment: Sendable, Equatable, Hashable {
    public var date: LocalDate
    public var cents: Int64
}

/// A move of money between two pots: the two transactions written for it.
public struct PotTransfer: Sendable, Equatable, Hashable, Identifiable {
    public var id: String
    public var out: LedgerTransaction
    public var `in`: LedgerTransaction
}
