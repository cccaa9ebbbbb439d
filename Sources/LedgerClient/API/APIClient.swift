import Foundation

/// Typed calls to the kidledger HTTP API (API.md) over a `Transport`.
struct APIClient: Sendable {
    /// The transport requests go through.
    let transport: any Transport
    /// The bearer token (`kl_…`), nil before signup/login.
    var token: String?
    /// Seconds each ordinary request may take; default 30. Long polls add their wait.
    var timeout: Double
    /// When set, requests are abandoned as soon as it is cancelled (`TransportError.cancelled`).
    var cancellation: SyncCancellation?

    init(transport: any Transport, token: String? = nil, timeout: Double = 30) {
        self.transport = transport
        self.token = token
        self.timeout = timeout
    }

    /// The result of a call: status and decoded body.
    struct Answer<Body> {
        var status: Int
        var body: Body
    }

    // MARK: Core

    /// Sends one request and returns the raw response for any 2xx; problems become `APIError`.
    func call(_ method: String, _ path: String, body: [UInt8]? = nil,
                     headers extra: [String: String] = [:], timeout: Double? = nil) throws(APIError) -> TransportResponse {
        var headers = extra
        headers["Accept"] = "application/json"
        if let token { headers["Authorization"] = "Bearer \(token)" }
        if body != nil { headers["Content-Type"] = "application/json; charset=utf-8" }
        let request = TransportRequest(method: method, path: path, headers: headers,
                                       body: body ?? [], timeout: timeout ?? self.timeout)
        let response: TransportResponse
        do {
            response = try transport.send(request, cancellation: cancellation)
        } catch let error as TransportError {
            throw .transport(error)
        } catch {
            throw .transport(.unreachable(String(describing: error)))
        }
        guard (200..<300).contains(response.status) else {
            let problem = try? JSONDecoder().decode(Wire.Problem.self, from: Data(response.body))
            let retryAfter = response.header("Retry-After").flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            throw .problem(status: response.status,
                           code: problem?.code ?? APIClient.defaultCode(for: response.status),
                           detail: problem?.detail ?? problem?.title,
                           retryAfterSeconds: retryAfter,
                           members: ProblemMembers(reason: problem?.reason, households: problem?.households))
        }
        return response
    }

    /// Sends `body` as JSON and decodes the 2xx answer as `T`.
    func json<T: Decodable>(_ method: String, _ path: String, _ type: T.Type,
                                   body: (some Encodable)? = Optional<Int>.none,
                                   timeout: Double? = nil) throws(APIError) -> Answer<T> {
        var bytes: [UInt8]?
        if let body {
            do { bytes = Array(try JSONEncoder().encode(body)) } catch {
                throw .invalidAnswer("cannot encode request: \(error)")
            }
        }
        let response = try call(method, path, body: bytes, timeout: timeout)
        do {
            return Answer(status: response.status, body: try JSONDecoder().decode(T.self, from: Data(response.body)))
        } catch {
            throw .invalidAnswer("\(method) \(path): \(error)")
        }
    }

    static func defaultCode(for status: Int) -> String {
        switch status {
        case 401: return "unauthenticated"
        case 403: return "forbidden"
        case 404: return "not_found"
        case 409: return "conflict"
        case 410: return "token_expired"
        case 429: return "rate_limited"
        default: return status >= 500 ? "internal" : "bad_request"
        }
    }

    /// Percent-encodes a query value.
    static func escape(_ value: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }
}
