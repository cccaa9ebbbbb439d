import Glibc
import HTTPServer
import LedgerCore
import LedgerModel

/// One request on its way through a handler.
final class RequestContext: @unchecked Sendable {
    let request: HTTPRequest
    let params: PathParameters
    let responder: any HTTPResponder
    let services: Services
    let routeLabel: String
    let routeIndex: Int?
    /// What the route lets a child token do (`ChildAccess`).
    let childAccess: ChildAccess
    private(set) var caller: Caller?
    /// Whether the handler runs on the connection's event loop (as its route's
    /// `Router.Execution` decided): a write's answer is then built there too (see
    /// `write(household:_:answer:)`).
    let answersOnLoop: Bool
    /// The client address after trusted-proxy resolution.
    let clientAddress: String
    /// Whether the request's Content-Type was already found to be JSON (when its head was
    /// screened).
    private let jsonMediaType: Bool

    /// `caller`: the caller already known from the request's token, if it was looked up;
    /// `jsonMediaType`: the request's Content-Type is known to name JSON.
    init(request: HTTPRequest, params: PathParameters, responder: any HTTPResponder, services: Services, routeLabel: String,
         routeIndex: Int? = nil, childAccess: ChildAccess = .none, caller: Caller? = nil, answersOnLoop: Bool = false,
         jsonMediaType: Bool = false) {
        self.jsonMediaType = jsonMediaType
        self.routeIndex = routeIndex
        self.childAccess = childAccess
        self.caller = caller
        self.answersOnLoop = answersOnLoop
        // Resolved before the request is stored, which is its last use (no copy).
        self.clientAddress = services.clientAddress.resolve(request)
        self.request = request
        self.params = params
        self.responder = responder
        self.services = services
        self.routeLabel = routeLabel
    }

    /// Answers (from any thread), tagging the response with the route label and index.
    func respond(_ response: consuming HTTPResponse) {
        // Consumed: tagged in place instead of copied (a retain of every field).
        response.routeLabel = routeLabel
        response.routeIndex = routeIndex
        if clientAddress != request.remoteAddress { response.clientAddress = clientAddress }
        responder.respond(consume response)
    }

    func respond(_ error: Error) {
        respond(Services.problem(for: error, logger: services.logger))
    }

    /// A path parameter that must be a UUID; 404 otherwise (checked before any query).
    func id(_ name: String) throws -> String {
        guard let id = params.lowercaseID(name) else { throw APIError.notFound() }
        return id
    }

    /// The request's JSON object body; 415 for a non-JSON content type.
    func body() throws -> JSONBody {
        if jsonMediaType {
            // Checked when the head was screened.
        } else if let ct = request.headers["Content-Type"] {
            guard RequestContext.isJSONMediaType(ct) else { throw RequestContext.unsupportedMediaType(contentType: ct) }
        } else if !request.body.isEmpty {
            throw RequestContext.unsupportedMediaType(contentType: nil)
        }
        return try JSONBody.parse(request.body)
    }

    static func unsupportedMediaType(contentType: String?) -> APIError {
        contentType == nil
            ? APIError(415, "unsupported_media_type", "Send the body as application/json (Content-Type is missing).")
            : APIError(415, "unsupported_media_type", "Send the body as application/json.")
    }

    /// Whether a Content-Type names JSON: `application/json` or `application/…+json`,
    /// any case, parameters such as `charset` ignored.
    static func isJSONMediaType(_ contentType: String) -> Bool {
        // Read in place (this runs on every write request): no arrays.
        var contentType = contentType
        return contentType.withUTF8 { b -> Bool in
            // What clients send, compared whole first.
            if b.count == 16 || b.count == 31, let base = b.baseAddress {
                let common: StaticString = b.count == 16 ? "application/json" : "application/json; charset=utf-8"
                if memcmp(base, common.utf8Start, b.count) == 0 { return true }
            }
            var end = 0
            while end < b.count && b[end] != UInt8(ascii: ";") { end += 1 }
            var start = 0
            while start < end && (b[start] == 0x20 || b[start] == 0x09) { start += 1 }
            while end > start && (b[end - 1] == 0x20 || b[end - 1] == 0x09) { end -= 1 }
            func matches(_ literal: StaticString, at offset: Int) -> Bool {
                let p = literal.utf8Start
                for k in 0..<literal.utf8CodeUnitCount {
                    let c = b[offset + k]
                    if (c >= 65 && c <= 90 ? c + 32 : c) != p[k] { return false }
                }
                return true
            }
            let n = end - start
            if n == 16 && matches("application/json", at: start) { return true }
            return n > 12 + 5 && matches("application/", at: start) && matches("+json", at: end - 5)
        }
    }

    /// The body if there is one, else an empty object.
    func optionalBody() throws -> JSONBody {
        if request.body.isEmpty { return JSONBody(JSONObject()) }
        return try body()
    }

    /// Authenticates the bearer token. A valid token is always served; a token that fails
    /// (malformed, unknown or revoked) counts against the client address, and once the
    /// address is past the limit its failing requests are 429 instead of 401 until its
    /// minute is over. No token at all is 401 and counts for nothing.
    /// A child token is then admitted only as far as the route's `childAccess` says.
    @discardableResult
    func authenticate() throws -> Caller {
        let c: Caller
        if let known = caller {
            c = known
        } else {
            c = try RequestContext.authenticate(request.headers["Authorization"], clientAddress: clientAddress,
                                                services: services)
            caller = c
        }
        if let scope = c.child {
            try childAccess.admit(scope, method: request.method, params: params)
        }
        return c
    }

    /// The caller of an `Authorization` header (see `authenticate()`); a known token is
    /// remembered in the read cache.
    /// `clientAddress` is evaluated only for a token that fails.
    static func authenticate(_ header: String?, clientAddress: @autoclosure () -> String, services: Services) throws -> Caller {
        guard let header else {
            throw APIError.unauthenticated("An Authorization: Bearer token is required.")
        }
        let key: TokenSecret.TokenKey
        if let quick = TokenSecret.bearerKey(header) {
            key = quick
        } else {
            let parts = header.split(separator: " ", maxSplits: 1)
            guard parts.count == 2, parts[0].lowercased() == "bearer", let k = TokenSecret.TokenKey(secret: parts[1]) else {
                throw authenticationFailed("The Authorization header is not a kidledger bearer token.",
                                           clientAddress: clientAddress(), services: services)
            }
            key = k
        }
        let cache = services.readCache
        if let known = cache.caller(token: key) { return known }
        let generation = cache.currentTokens
        // An account's token, else a child's device's.
        guard let c = try services.storage.read({ r in try r.caller(tokenHash: key.sha256) ?? r.childCaller(tokenHash: key.sha256) })
        else {
            throw authenticationFailed("The token is unknown or was revoked.", clientAddress: clientAddress(), services: services)
        }
        cache.store(c, token: key, readAt: generation)
        return c
    }

    /// The caller of an `Authorization` header when its token is remembered (no storage
    /// read needed); nil otherwise.
    static func rememberedCaller(_ header: String?, services: Services) -> Caller? {
        guard let header, let key = TokenSecret.bearerKey(header) else { return nil }
        return services.readCache.caller(token: key)
    }

    /// The answer to a token that failed: 429 with `Retry-After` while the client address
    /// is over its limit, else 401 (and the failure is counted).
    private static func authenticationFailed(_ detail: String, clientAddress: String, services: Services) -> APIError {
        services.authLimiter.refusal(clientAddress) { APIError.unauthenticated(detail) }
    }

    /// A JSON response.
    func json(_ status: Int, _ value: JSONValue, etag: String? = nil, headers extra: [(String, String)] = []) -> Reply {
        .response(RequestContext.jsonResponse(status, value, etag: etag, headers: extra))
    }

    static func jsonResponse(_ status: Int, _ value: JSONValue, etag: String? = nil, headers extra: [(String, String)] = []) -> HTTPResponse {
        jsonResponse(status, body: value.serialized(), etag: etag, headers: extra)
    }

    /// A JSON response whose body is already serialized.
    static func jsonResponse(_ status: Int, body: [UInt8], etag: String? = nil, headers extra: [(String, String)] = []) -> HTTPResponse {
        // One allocation for the fields; the first two cannot be there already.
        var h = HTTPHeaders()
        h.reserveCapacity(1 + (etag == nil ? 0 : 1) + extra.count)
        h.add("Content-Type", "application/json; charset=utf-8")
        if let etag { h.add("ETag", "\"\(etag)\"") }
        for (k, v) in extra { h.set(k, v) }
        return HTTPResponse(status: status, headers: h, body: body)
    }

    static func noContent() -> HTTPResponse { HTTPResponse(status: 204) }

    /// `limit` query parameter within 1…max (default `defaultValue`), else 422.
    func limit(default defaultValue: Int = 100, max: Int = 1000) throws -> Int {
        guard let raw = request.queryValue("limit") else { return defaultValue }
        guard let v = Int(raw), v >= 1, v <= max else {
            throw APIError.validation("limit", "must be an integer from 1 to \(max)")
        }
        return v
    }
}
