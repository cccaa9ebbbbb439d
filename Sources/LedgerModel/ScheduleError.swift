import Foundation

/// Why a schedule's value was refused; `description` is a message for the `fields` map of a
/// `validation_failed` problem.
public enum ScheduleError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The time zone is not an accepted IANA name (`ScheduleTimeZone`).
    case unknownTimeZone(String)
    /// A split with no pots.
    case emptySplit
    /// A pot's percent outside 1…100.
    case splitPercentOutOfRange(potId: UUID, percent: Int)
    /// The percents add up to this instead of 100.
    case splitPercentsDoNotSumTo100(Int)
    /// A pot named twice in one split.
    case duplicateSplitPot(UUID)

    public var description: String {
        switch self {
        case .unknownTimeZone(let name):
            "unknown time zone \"\(name)\": must be an IANA name such as Europe/Zurich, or UTC"
        case .emptySplit:
            "must name at least one pot"
        case .splitPercentOutOfRange(let pot, let percent):
            "percent of pot \(pot.lowercased) must be 1 to 100, not \(percent)"
        case .splitPercentsDoNotSumTo100(let sum):
            "percents must add up to 100, not \(sum)"
        case .duplicateSplitPot(let pot):
            "pot \(pot.lowercased) is named more than once"
        }
    }
}
