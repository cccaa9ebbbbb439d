import HTTPServer

/// What a route handler produced: an answer now, or a promise to answer through the
/// context later (after a group commit, or when a long-poll wakes).
enum Reply {
    case response(HTTPResponse)
    case pending
}

typealias RouteHandler = @Sendable (RequestContext) throws -> Reply

/// Method + path-template routing. Templates use `{name}` segments.
struct Router: Sendable {
    struct Route: Sendable {
        let method: String
        let template: String
        let segments: [Substring]
        let handler: RouteHandler
        /// Whether the handler may run inline on the event loop (trivial, no I/O).
        let inline: Bool
        /// A GET whose work is small and bounded (not the change feed).
        var boundedRead: Bool { !template.hasSuffix("/changes") && !template.hasSuffix("/sync-status") && template != "/readyz" }
    }

    enum Match {
        case found(Route, [String: String])
        case methodNotAllowed([String])
        case notFound
    }

    private(set) var routes: [Route] = []

    mutating func add(_ method: String, _ template: String, inline: Bool = false, _ handler: @escaping RouteHandler) {
        routes.append(Route(method: method, template: template,
                            segments: template.split(separator: "/", omittingEmptySubsequences: false),
                            handler: handler, inline: inline))
    }

    func match(method: String, path: String) -> Match {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        var allowed: [String] = []
        var found: (Route, [String: String])?
        for route in routes where route.segments.count == parts.count {
            var params: [String: String] = [:]
            var ok = true
            for (t, p) in zip(route.segments, parts) {
                if t.first == "{" && t.last == "}" {
                    if p.isEmpty { ok = false; break }
                    params[String(t.dropFirst().dropLast())] = PercentDecoding.decode(p) ?? String(p)
                } else if t != p {
                    ok = false; break
                }
            }
            guard ok else { continue }
            if route.method == method || (method == "HEAD" && route.method == "GET") {
                if found == nil || route.method == method { found = (route, params) }
            }
            if !allowed.contains(route.method) { allowed.append(route.method) }
        }
        if let found { return .found(found.0, found.1) }
        if !allowed.isEmpty {
            if allowed.contains("GET") && !allowed.contains("HEAD") { allowed.append("HEAD") }
            return .methodNotAllowed(allowed)
        }
        return .notFound
    }
}
