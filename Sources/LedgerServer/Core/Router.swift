import Foundation
import Glibc
import HTTPServer
import LedgerModel

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
    /// A class: a match hands the route on, and a struct of this many fields would be
    /// copied field by field (a retain each) on every request.
    final class Route: Sendable {
        let method: String
        let template: String
        /// Each segment's bytes, compared with the path's on every request.
        let literals: [[UInt8]]
        /// For each segment, the parameter name, or nil for a literal segment.
        let parameterNames: [String?]
        let handler: RouteHandler
        /// Which thread runs the handler, as the route declared it.
        let execution: Execution
        /// Whether the route needs a bearer token: a body sent without a known one is
        /// answered 401 from the head, never read.
        let authenticated: Bool
        /// Whether the route reads a JSON body (POST, PUT, PATCH): another media type is
        /// answered 415 from the head.
        let takesJSONBody: Bool
        /// The largest body the route reads, in bytes; nil: the server's limit.
        let bodyLimit: Int?
        /// What the route lets a child token do (`ChildAccess`).
        let childAccess: ChildAccess
        /// The route's place in the router (its `routeIndex` in responses and the access log).
        let index: Int
        /// `Router.methodCode(method)`, compared on every request instead of the string.
        let methodCode: UInt8

        init(method: String, template: String, literals: [[UInt8]], parameterNames: [String?],
             handler: @escaping RouteHandler, execution: Execution, authenticated: Bool = true, bodyLimit: Int? = nil,
             childAccess: ChildAccess = .none, index: Int = 0) {
            self.index = index
            self.childAccess = childAccess
            self.authenticated = authenticated
            self.takesJSONBody = method == "POST" || method == "PUT" || method == "PATCH"
            // A route without a body of its own (GET, HEAD, DELETE) reads at most a small one.
            self.bodyLimit = bodyLimit ?? (takesJSONBody ? nil : Router.smallBodyLimit)
            self.methodCode = Router.methodCode(method)
            self.method = method
            self.template = template
            self.literals = literals
            self.parameterNames = parameterNames
            self.handler = handler
            self.execution = execution
        }

        /// Whether every literal segment equals the path's (parameters must be non-empty).
        /// Compared from the last segment: routes of one length mostly differ at the end.
        func fits(_ path: UnsafeBufferPointer<UInt8>, _ parts: UnsafeMutableBufferPointer<Range<Int>>) -> Bool {
            var i = literals.count
            while i > 0 {
                i -= 1
                let part = parts[i]
                if parameterNames[i] != nil {
                    if part.isEmpty { return false }
                    continue
                }
                let equal = literals[i].withUnsafeBufferPointer { literal -> Bool in
                    literal.count == part.count
                        && (literal.isEmpty || memcmp(literal.baseAddress!, path.baseAddress! + part.lowerBound, literal.count) == 0)
                }
                if !equal { return false }
            }
            return true
        }
    }

    enum Match {
        case found(Route, PathParameters)
        case methodNotAllowed([String])
        case notFound
    }

    private(set) var routes: [Route] = []
    /// Indices into `routes` by segment count (index 0 unused).
    private var bySegmentCount: [[Int]] = []

    /// The body limit of routes that take no body, in bytes. 64 KiB.
    static let smallBodyLimit = 64 * 1024

    /// Adds a route that runs as `execution` says. `authenticated: false` for the few
    /// routes open to anyone; `bodyLimit` where the route reads less than the server's limit;
    /// `child` what a child token may do there (`ChildAccess`; nothing by default).
    mutating func add(_ method: String, _ template: String, runs execution: Execution, authenticated: Bool = true,
                      bodyLimit: Int? = nil, child: ChildAccess = .none, _ handler: @escaping RouteHandler) {
        let segments = template.split(separator: "/", omittingEmptySubsequences: false)
        let names: [String?] = segments.map { s in
            s.first == "{" && s.last == "}" ? String(s.dropFirst().dropLast()) : nil
        }
        while bySegmentCount.count <= segments.count { bySegmentCount.append([]) }
        bySegmentCount[segments.count].append(routes.count)
        routes.append(Route(method: method, template: template,
                            literals: segments.map { Array($0.utf8) }, parameterNames: names,
                            handler: handler, execution: execution, authenticated: authenticated, bodyLimit: bodyLimit,
                            childAccess: child, index: routes.count))
    }

    func match(method: String, path: String) -> Match {
        var utf8 = path
        return utf8.withUTF8 { bytes in
            // Segment bounds, split at every "/"; a path of more segments than any route
            // has matches nothing. The slashes are found by memchr (a byte loop costs
            // several instructions a byte, twice over the path).
            guard let base = bytes.baseAddress else { return .notFound }
            func slash(after start: Int) -> Int? {
                guard start < bytes.count, let p = memchr(base + start, Int32(UInt8(ascii: "/")), bytes.count - start) else {
                    return nil
                }
                return UnsafeRawPointer(p) - UnsafeRawPointer(base)
            }
            var count = 1
            var at = slash(after: 0)
            while let i = at {
                count += 1
                if count >= bySegmentCount.count { return .notFound }
                at = slash(after: i + 1)
            }
            guard count < bySegmentCount.count, !bySegmentCount[count].isEmpty else { return .notFound }
            return withUnsafeTemporaryAllocation(of: Range<Int>.self, capacity: count) { parts in
                var start = 0, n = 0
                while let i = slash(after: start) {
                    parts.initializeElement(at: n, to: start..<i)
                    n += 1
                    start = i + 1
                }
                parts.initializeElement(at: n, to: start..<bytes.count)
                return match(method: method, path: path, bytes, parts, candidates: bySegmentCount[count])
            }
        }
    }

    /// A number for each method routes use, 0 for any other: matching compares these for
    /// every route of the path's length (comparing two different strings costs more).
    static func methodCode(_ method: String) -> UInt8 {
        switch method {
        case "GET": getCode
        case "HEAD": headCode
        case "POST": 3
        case "PUT": 4
        case "PATCH": 5
        case "DELETE": 6
        default: 0
        }
    }
    private static let getCode: UInt8 = 1, headCode: UInt8 = 2

    private func match(method: String, path: String, _ bytes: UnsafeBufferPointer<UInt8>,
                       _ parts: UnsafeMutableBufferPointer<Range<Int>>, candidates: [Int]) -> Match {
        let code = Self.methodCode(method)
        var found: Int?
        for index in candidates {
            let route = routes[index]
            let same = route.methodCode == code && (code != 0 || route.method == method)
            // HEAD is answered by the GET route when there is no HEAD route of its own.
            guard same || (code == Self.headCode && route.methodCode == Self.getCode) else { continue }
            guard route.fits(bytes, parts) else { continue }
            if found == nil || same { found = index }
        }
        if let found { return .found(routes[found], PathParameters(names: routes[found].parameterNames, path: path)) }
        // No route of this method: the methods of the routes the path fits, for the 405.
        var allowed: [String] = []
        for index in candidates where routes[index].fits(bytes, parts) {
            if !allowed.contains(routes[index].method) { allowed.append(routes[index].method) }
        }
        if !allowed.isEmpty {
            if allowed.contains("GET") && !allowed.contains("HEAD") { allowed.append("HEAD") }
            return .methodNotAllowed(allowed)
        }
        return .notFound
    }
}

/// The parameters of a matched path, read from the path only when a handler asks for one:
/// matching builds no dictionary and no strings.
struct PathParameters: Sendable {
    /// The route's segments: the parameter name, or nil for a literal segment.
    let names: [String?]
    let path: String

    /// Parameter `name` percent-decoded (as written when an escape is malformed); nil when
    /// the route has no such parameter.
    subscript(name: String) -> String? {
        withSegment(name) { segment in
            let raw = String(decoding: segment, as: UTF8.self)
            return segment.contains(UInt8(ascii: "%")) ? (PercentDecoding.decode(raw) ?? raw) : raw
        } ?? nil
    }

    /// Parameter `name` as a UUID (any case); nil when it is absent or not one. The same
    /// as parsing `self[name]`, without making a string when the segment has no escape.
    func uuid(_ name: String) -> UUID? {
        withSegment(name) { segment in
            segment.contains(UInt8(ascii: "%")) ? self[name].flatMap { LedgerIDs.parse($0) } : LedgerIDs.parse(utf8: segment)
        } ?? nil
    }

    /// Parameter `name` as a UUID in lowercase canonical form (`uuid(name)?.lowercased`);
    /// a parameter already in that form is copied, not parsed and written again.
    func lowercaseID(_ name: String) -> String? {
        let copied = withSegment(name) { segment in
            LedgerIDs.isLowercaseCanonical(utf8: segment) ? String(decoding: segment, as: UTF8.self) : nil
        } ?? nil
        return copied ?? uuid(name)?.lowercased
    }

    /// Every parameter, decoded as by the subscript.
    var all: [String: String] {
        var out: [String: String] = [:]
        for case let name? in names { out[name] = self[name] }
        return out
    }

    /// `body` over the bytes of parameter `name`'s segment; nil when there is no such parameter.
    private func withSegment<T>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>) -> T) -> T? {
        guard let index = names.firstIndex(where: { $0 == name }) else { return nil }
        var path = path
        return path.withUTF8 { bytes in
            // The segment after the index-th "/" (segment 0 is the empty one before the first).
            var start = 0, seen = 0
            while seen < index {
                guard let slash = bytes[start...].firstIndex(of: UInt8(ascii: "/")) else { return nil }
                start = slash + 1
                seen += 1
            }
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "/")) ?? bytes.count
            return body(UnsafeBufferPointer(rebasing: bytes[start..<end]))
        }
    }
}
