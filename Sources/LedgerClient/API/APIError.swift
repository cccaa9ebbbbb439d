/// A failed call to the server, classified the way the sync engine needs it.
enum APIError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The request may not have arrived, or its answer was lost.
    case transport(TransportError)
    /// The server answered with a problem document (`code` is its stable code; `members`, the
    /// members some codes add).
    case problem(status: Int, code: String, detail: String?, retryAfterSeconds: Double?, members: ProblemMembers = ProblemMembers())
    /// The server's answer was not the JSON the contract describes.
    case invalidAnswer(String)

    /// True when the same request may succeed later: network trouble, 5xx, 429.
    var isTransient: Bool {
        switch self {
        case .transport(let error): return error != .cancelled
        case .problem(let status, _, _, _, _): return status >= 500 || status == 429 || status == 408
        case .invalidAnswer: return false
        }
    }

    /// True when the caller cancelled the request (see `SyncCancellation`).
    var isCancellation: Bool { self == .transport(.cancelled) }

    /// True when nothing answered at all (the device is offline or the server is down).
    var isUnreachable: Bool {
        if case .transport(let error) = self { return error != .cancelled }
        return false
    }

    /// The problem `code`, when the server sent one.
    var code: String? {
        if case .problem(_, let code, _, _, _) = self { return code }
        return nil
    }

    /// The members of the problem beyond its code, when the server answered with one.
    var members: ProblemMembers {
        if case .problem(_, _, _, _, let members) = self { return members }
        return ProblemMembers()
    }

    /// The HTTP status, when the server answered.
    var status: Int? {
        if case .problem(let status, _, _, _, _) = self { return status }
        return nil
    }

    var description: String {
        switch self {
        case .transport(let error):
            switch error {
            case .unreachable(let why): return "server unreachable (\(why))"
            case .timedOut: return "server did not answer in time"
            case .invalidResponse(let why): return "unreadable answer from server (\(why))"
            case .cancelled: return "cancelled"
            }
        case .problem(let status, let code, let detail, _, _):
            return "server refused (\(status) \(code))" + (detail.map { ": \($0)" } ?? "")
        case .invalidAnswer(let why):
            return "unexpected answer from server: \(why)"
        }
    }
}

/// Members of a problem document that particular codes add (API.md v1.2).
struct ProblemMembers: Equatable, Sendable {
    /// `invalid_id_token`: which check failed (`expired`, `nonce`, `signature`, …).
    var reason: String?
    /// `owner_of_shared_household`: the shared households the account owns.
    var households: [String]?

    init(reason: String? = nil, households: [String]? = nil) {
        self.reason = reason
        self.households = households
    }
}
