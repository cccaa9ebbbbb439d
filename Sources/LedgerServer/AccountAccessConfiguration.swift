import LedgerCore

/// The limits on the codes that reach an account without a token (link codes, recovery
/// codes). Each counts failures in the database, so it holds across server processes;
/// 0 turns one off.
public struct AccountAccessConfiguration: Sendable {
    /// Failed link-code redemptions one client address (an IPv4 address, an IPv6 /64) may
    /// make per minute; then 429 `rate_limited` until the minute is over. Default 10.
    public var linkCodeFailuresPerMinute: Int = 10
    /// Failed redemptions the codes sharing a live code's first two characters may see
    /// before the code is void (its 50 other bits face at most that many guesses, from
    /// any number of addresses). Default 10.
    public var linkCodeFailuresPerCode: Int = 10
    /// Failed recoveries one client address may make per minute. Default 10.
    public var recoveryFailuresPerMinute: Int = 10
    /// Failed recoveries of one handle per hour, from anywhere (unknown handles count
    /// alike, so a 429 tells nothing of whether the handle exists). Default 10.
    public var recoveryFailuresPerHandlePerHour: Int = 10

    public init() {}

    /// Per address: link codes.
    var linkCodeLimits: CodeAttemptLimits {
        CodeAttemptLimits(perAddress: AttemptLimit(scope: "link-address", limit: linkCodeFailuresPerMinute, windowMs: 60_000),
                          perHandle: nil, perCode: linkCodeFailuresPerCode)
    }

    /// Per address and per handle: recovery codes.
    var recoveryLimits: CodeAttemptLimits {
        CodeAttemptLimits(perAddress: AttemptLimit(scope: "recovery-address", limit: recoveryFailuresPerMinute, windowMs: 60_000),
                          perHandle: AttemptLimit(scope: "recovery-handle", limit: recoveryFailuresPerHandlePerHour,
                                                  windowMs: 3_600_000))
    }
}
