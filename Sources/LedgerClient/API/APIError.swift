/// A failed call to the server, classified the way the sync engine needs it.
enum APIError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The request may not have arrived, or its answer was lost.
    case transport(TransportError)
    /// The server answered with a problem document (`code` is its stable code).
    case problem(status: Int, code: String, detail: String?, retryAfterSeconds: Double?)
    /// The server's answer was not the JSON the contract describes.
    case invalidAnswer(String)

    /// True when the same request may succeed later: network trouble, 5xx, 429.
    var isTransient: Bool {
        switch self {
        case .transport(let error): return error != .cancelled
        case .problem(let status, _, _, _): return status >= 500 || status == 429 || status == 408
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
        if case .problem(_, let code, _, _) = self { return code }
        return nil
    }

    /// The HTTP status, when the server answered.
    var status: Int? {
        if case .problem(let status, _, _, _) = self { return status }
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
        case .problem(let status, let code, let detail, _):
            return "server refused (\(status) \(code))" + (detail.map { ": \($0)" } ?? "")
        case .invalidAnswer(let why):
            return "unexpected answer from server: \(why)"
        }
    }
}
