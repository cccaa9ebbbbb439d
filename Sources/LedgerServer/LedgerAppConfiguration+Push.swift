import Foundation

extension LedgerAppConfiguration {
    /// Whether devices may register for push wakes (a gateway is configured).
    var pushEnabled: Bool { !pushGateways.isEmpty }

    /// What is wrong with the push settings, as a sentence (nil: nothing): each gateway an
    /// absolute http(s) URL with a host, no credentials, no fragment; intervals positive.
    public var pushProblem: String? {
        for g in pushGateways {
            guard let u = URLComponents(string: g), let scheme = u.scheme?.lowercased(), scheme == "https" || scheme == "http",
                  let host = u.host, !host.isEmpty, u.user == nil, u.password == nil, u.fragment == nil else {
                return "--push-gateway \(g): expected the gateway's full notify URL, such as https://push.example.com/_matrix/push/v1/notify"
            }
        }
        if !(pushMinInterval >= 0 && pushMinInterval.isFinite) { return "--push-min-interval must be zero or more seconds" }
        for (name, v) in [("push-retry-seconds", pushRetrySeconds), ("push-retry-max-seconds", pushRetryMaxSeconds),
                          ("push-timeout", pushTimeout), ("push-poll-seconds", pushPollSeconds)] where !(v > 0 && v.isFinite) {
            return "--\(name) must be a positive number of seconds"
        }
        return nil
    }
}
