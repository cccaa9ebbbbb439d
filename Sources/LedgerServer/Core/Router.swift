import HTTPServer

/// What a route handler produced: an answer now, or a promise to answer through the
/// context later (after a group commit, or when a long-poll wakes).
enum Reply {
    case response(HTTPResponse)
    case pending
}

typealias RouteHandler = @Sendable (RequestContext) throws -> Reply

/// Method + path-template routing. Templates use `{name}` segments.
///
/// Matching runs on every request, so it compares the literal segments of the routes with
/// the same number of segments first and decodes parameters only for the routes that fit.
struct Router: Sendable {
    struct Route: Sendable {
        let method: String
        let template: String
        /// Each segment's bytes, compared with the path's on every request.
        let literals: [[UInt8]]
        /// For each segment, the parameter name, or nil for a literal segment.
        let parameterNames: [String?]
        let handler: RouteHandler
        /// Whether the handler may run inline on the event loop (trivial, no I/O).
        let inline: Bool
        /// Whether the handler's own work is small and bounded, so it may run on the event
        /// loop: everything but the change feed and batch push, sync status, the readiness
        /// probe and the subscription and notification routes (which verify or sign a JWS). A write
        /// handler only validates its body there and hands the work to the writer thread.
        /// Decided once, when the route is added.
        let lightweight: Bool

        static func isLightweight(_ template: String, inline: Bool) -> Bool {
            inline || !(template.hasSuffix("/changes") || template.hasSuffix("/sync-status") || template == "/readyz"
                        || template.hasSuffix("/subscription") || template.hasSuffix("/entitlement")
                        || template.hasSuffix("/entitlement/token") || template.hasSuffix("/notifications"))
        }

        /// Whether every literal segment equals the path's (parameters must be non-empty).
        func fits(_ path: [UInt8], _ parts: [Range<Int>]) -> Bool {
            for i in 0..<literals.count {
                if parameterNames[i] != nil {
                    if parts[i].isEmpty { return false }
                } else if !path[parts[i]].elementsEqual(literals[i]) {
                    return false
                }
            }
            return true
        }
    }

    enum Match {
        case found(Route, [String: String])
        case methodNotAllowed([String])
        case notFound
    }

    private(set) var routes: [Route] = []
    /// Indices into `routes` by segment count.
    private var bySegmentCount: [Int: [Int]] = [:]

    mutating func add(_ method: String, _ template: String, inline: Bool = false, _ handler: @escaping RouteHandler) {
        let segments = template.split(separator: "/", omittingEmptySubsequences: false)
        let names: [String?] = segments.map { s in
            s.first == "{" && s.last == "}" ? String(s.dropFirst().dropLast()) : nil
        }
        bySegmentCount[segments.count, default: []].append(routes.count)
        routes.append(Route(method: method, template: template,
                            literals: segments.map { Array($0.utf8) }, parameterNames: names,
                            handler: handler, inline: inline,
                            lightweight: Route.isLightweight(template, inline: inline)))
    }

    func match(method: String, path: String) -> Match {
        let bytes = Array(path.utf8)
        var parts: [Range<Int>] = []
        parts.reserveCapacity(8)
        var start = 0
        for i in 0..<bytes.count where bytes[i] == UInt8(ascii: "/") {
            parts.append(start..<i)
            start = i + 1
        }
        parts.append(start..<bytes.count)
        guard let candidates = bySegmentCount[parts.count] else { return .notFound }
        var allowed: [String] = []
        var found: Int?
        for index in candidates {
            // By index: copying a Route retains every array and string in it.
            guard routes[index].fits(bytes, parts) else { continue }
            let routeMethod = routes[index].method
            if routeMethod == method || (method == "HEAD" && routeMethod == "GET") {
                if found == nil || routeMethod == method { found = index }
            }
            if !allowed.contains(routeMethod) { allowed.append(routeMethod) }
        }
        if let found {
            let route = routes[found]
            var params: [String: String] = Dictionary(minimumCapacity: route.parameterNames.count)
            for (name, range) in zip(route.parameterNames, parts) {
                guard let name else { continue }
                let raw = String(decoding: bytes[range], as: UTF8.self)
                params[name] = bytes[range].contains(UInt8(ascii: "%")) ? (PercentDecoding.decode(raw) ?? raw) : raw
            }
            return .found(route, params)
        }
        if !allowed.isEmpty {
            if allowed.contains("GET") && !allowed.contains("HEAD") { allowed.append("HEAD") }
            return .methodNotAllowed(allowed)
        }
        return .notFound
    }
}
