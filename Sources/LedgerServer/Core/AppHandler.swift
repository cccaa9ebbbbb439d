import Foundation
import HTTPServer
import LedgerCore
import LedgerModel
import Synchronization

/// A late-bound closure (the HTTP server exists only after the handler).
final class LateBound<T: Sendable>: Sendable {
    private let value: Mutex<(@Sendable () -> T)?> = Mutex(nil)
    func set(_ f: @escaping @Sendable () -> T) { value.withLock { $0 = f } }
    func get(_ fallback: T) -> T { (value.withLock { $0 })?() ?? fallback }
}

/// The HTTP entry point: routes each request and runs its handler on the thread its route
/// declared (`Router.Execution`).
final class AppHandler: HTTPHandler {
    let services: Services
    let router: Router
    let staticFiles: StaticFiles

    init(services: Services, router: Router, staticFiles: StaticFiles) {
        self.services = services
        self.router = router
        self.staticFiles = staticFiles
    }

    func handle(_ request: consuming HTTPRequest, responder: any HTTPResponder) {
        // The caller the head's token was found to be (while no token was revoked since), and
        // whether its media type was found to be JSON.
        var remembered: Caller?
        var jsonMediaType = false
        let match = Screening.take(by: self, method: request.method, path: request.path, headers: request.headers,
                                   readCache: services.readCache, caller: &remembered, jsonMediaType: &jsonMediaType)
            ?? router.match(method: request.method, path: request.path)
        switch match {
        case .found(let route, let params):
            // Where the route runs, as it was registered (`Router.Execution`).
            let onLoop: Bool
            switch route.execution.place(bodyBytes: request.body.count, storageIsLocal: !services.backend.offLoop) {
            case .loop: onLoop = true
            case .worker: onLoop = false
            case .loopIfCallerKnown:
                if remembered == nil {
                    remembered = RequestContext.rememberedCaller(request.headers["Authorization"], services: services)
                }
                onLoop = remembered != nil
            }
            let ctx = RequestContext(request: consume request, params: params, responder: responder,
                                     services: services, routeLabel: route.template, routeIndex: route.index,
                                     childAccess: route.childAccess, caller: remembered, answersOnLoop: onLoop,
                                     jsonMediaType: jsonMediaType)
            if onLoop {
                run(route, ctx)
            } else if !services.offLoop({ self.run(route, ctx) }) {
                ctx.respond(Self.busy())
            }
        case .methodNotAllowed(let allowed):
            responder.respond(Self.methodNotAllowed(request.method, allowed))
        case .notFound:
            if (request.method == "GET" || request.method == "HEAD"), !request.path.hasPrefix("/v1/"),
               var file = staticFiles.response(for: request) {
                file.routeLabel = "static"
                responder.respond(file)
                return
            }
            responder.respond(Self.notFound(request.path))
        }
    }

    /// What the head of a request with a body decides: no such route (404), method (405),
    /// a missing, malformed or unknown token (401, or 429 past the failed-authentication
    /// limit), a media type that is not JSON (415); else the route's body limit (413 from
    /// `Content-Length`, or as soon as a chunked body passes it). The body is never read
    /// for a refusal. A token that needs a storage read over remote storage (PostgreSQL) is
    /// looked up on a worker, as every other read there (`BodyAdmission.later`).
    func screen(_ head: HTTPRequestHead, remoteAddress: String) -> BodyAdmission {
        let (path, _) = HTTPRequest.split(head.target)
        // An absolute-form target is routed when the request is complete.
        guard path.utf8.first == UInt8(ascii: "/") else { return .read(limit: nil) }
        let match = router.match(method: head.method, path: path)
        let kept = Screening.keep(match, by: self, method: head.method, path: path, headers: head.headers)
        switch match {
        case .notFound:
            // A static file's GET carries no body worth reading.
            if (head.method == "GET" || head.method == "HEAD") && !path.hasPrefix("/v1/") {
                return .read(limit: Router.smallBodyLimit)
            }
            return .refuse(Self.notFound(path))
        case .methodNotAllowed(let allowed):
            return .refuse(Self.methodNotAllowed(head.method, allowed))
        case .found(let route, _):
            let authorization = head.headers["Authorization"]
            if route.authenticated, services.backend.offLoop, authorization != nil,
               RequestContext.rememberedCaller(authorization, services: services) == nil {
                return .later { verdict in
                    let queued = self.services.offLoop {
                        verdict(self.admission(route, head, authorization: authorization, remoteAddress: remoteAddress))
                    }
                    if !queued {
                        var r = Self.busy()
                        r.routeLabel = route.template
                        r.routeIndex = route.index
                        verdict(.refuse(r))
                    }
                }
            }
            return admission(route, head, authorization: authorization, remoteAddress: remoteAddress, keeping: kept)
        }
    }

    /// What a found route's head decides: its token (`RequestContext.authenticate`, which may
    /// read storage; `authorization` is the head's field), then its media type, then its body
    /// limit. What it found is noted in `kept` (the screening thread's, for the request's
    /// `handle`), when there is one.
    private func admission(_ route: Router.Route, _ head: HTTPRequestHead, authorization: String?, remoteAddress: String,
                           keeping kept: Screening.Kept? = nil) -> BodyAdmission {
        if route.authenticated {
            // The client's address counts only a token that fails: resolved then, not for
            // every request (it takes a request built from the head).
            let services = services
            func clientAddress() -> String {
                services.clientAddress.resolve(
                    HTTPRequest(method: head.method, target: head.target, headers: head.headers, remoteAddress: remoteAddress))
            }
            do {
                // Read before the lookup: a revocation committed after it changes the generation.
                let generation = services.readCache.currentTokens
                let caller = try RequestContext.authenticate(authorization, clientAddress: clientAddress(), services: services)
                if let kept { (kept.caller, kept.tokenGeneration) = (caller, generation) }
            } catch {
                let clientAddress = clientAddress()
                var r = Services.problem(for: error, logger: services.logger)
                r.routeLabel = route.template
                r.routeIndex = route.index
                if clientAddress != remoteAddress { r.clientAddress = clientAddress }
                return .refuse(r)
            }
        }
        if route.takesJSONBody {
            let ct = head.headers["Content-Type"]
            if ct == nil || !RequestContext.isJSONMediaType(ct!) {
                var r = RequestContext.unsupportedMediaType(contentType: ct).response
                r.routeLabel = route.template
                r.routeIndex = route.index
                return .refuse(r)
            }
            kept?.jsonMediaType = true
        }
        return .read(limit: route.bodyLimit)
    }

    /// 503 with `Retry-After: 1`: the workers' backlog is full.
    static func busy() -> HTTPResponse {
        var e = APIError(503, "service_unavailable", "The server is busy; retry shortly.")
        e.headers.set("Retry-After", "1")
        return e.response
    }

    private static func methodNotAllowed(_ method: String, _ allowed: [String]) -> HTTPResponse {
        var e = APIError(405, "method_not_allowed", "\(method) is not allowed here; use \(allowed.joined(separator: ", ")).")
        e.headers.set("Allow", allowed.joined(separator: ", "))
        var r = e.response
        r.routeLabel = "method_not_allowed"
        return r
    }

    private static func notFound(_ path: String) -> HTTPResponse {
        var r = APIError.notFound("No resource at \(path).").response
        r.routeLabel = "not_found"
        return r
    }

    private func run(_ route: Router.Route, _ ctx: RequestContext) {
        do {
            switch try route.handler(ctx) {
            case .response(let r): ctx.respond(r)
            case .pending: break
            }
        } catch {
            ctx.respond(error)
        }
    }
}

/// What the screening of a head established, kept on the screening thread (an event loop)
/// for the request's `handle`, which mostly runs next on the same thread once the body is
/// read: the route match (one match per request with a body instead of two), the caller
/// its token was found to be (one token lookup instead of two) and that its media type is
/// JSON (checked once). Matching depends on the router, the method and the path alone (a
/// handler's router never changes), so a kept match is used only by the same handler for
/// the same method and path (several servers may share a thread, as tests' servers in
/// process do); the caller and the media type only for the same header fields too (the
/// request's are the head's, one storage, unless a field was removed); any other request
/// matches and looks up as before.
///
/// A token revoked while the body was read is still refused: the kept caller is used only
/// while the token generation read before its lookup is current (`ReadCache`: a commit that
/// revokes a token bumps it before it is answered), as the cache itself would serve it, and
/// never where cached lookups expire by age (several processes over PostgreSQL).
private enum Screening {
    final class Kept {
        weak var handler: AppHandler?
        var method = "", path = ""
        var match: Router.Match?
        /// The head's fields, held so that their storage is not another list's while kept.
        var headers = HTTPHeaders()
        /// The caller the head's token was found to be, and `ReadCache.currentTokens` read
        /// before the lookup.
        var caller: Caller?
        var tokenGeneration: UInt64 = 0
        /// Whether the head's Content-Type was found to be JSON.
        var jsonMediaType = false
    }

    /// Each thread's `Kept`, released when the thread ends.
    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        let created = pthread_key_create(&key) { kept in
            if let kept { Unmanaged<Kept>.fromOpaque(kept).release() }
        }
        precondition(created == 0, "pthread_key_create failed")
        return key
    }()

    private static var kept: Kept {
        if let p = pthread_getspecific(key) { return Unmanaged<Kept>.fromOpaque(p).takeUnretainedValue() }
        let kept = Kept()
        pthread_setspecific(key, Unmanaged.passRetained(kept).toOpaque())
        return kept
    }

    /// Keeps `match` of a head (replacing what the thread kept before); the returned `Kept`
    /// takes what the head's admission finds.
    static func keep(_ match: Router.Match, by handler: AppHandler, method: String, path: String,
                     headers: HTTPHeaders) -> Kept {
        let k = kept
        (k.handler, k.method, k.path, k.match, k.headers) = (handler, method, path, match, headers)
        (k.caller, k.jsonMediaType) = (nil, false)
        return k
    }

    /// The match `handler` kept of `method` and `path`, once; nil for any other request.
    /// With it, for the same header fields: into `caller` the kept caller while no token was
    /// revoked since its lookup (and `readCache` serves lookups for as long), into
    /// `jsonMediaType` whether the media type is JSON. (Moved out, not copied: a copy of a
    /// caller costs a few hundred instructions.)
    static func take(by handler: AppHandler, method: String, path: String, headers: HTTPHeaders, readCache: ReadCache,
                     caller: inout Caller?, jsonMediaType: inout Bool) -> Router.Match? {
        guard let p = pthread_getspecific(key) else { return nil }
        let k = Unmanaged<Kept>.fromOpaque(p).takeUnretainedValue()
        guard let match = k.match else { return nil }
        k.match = nil
        defer { (k.caller, k.headers) = (nil, HTTPHeaders()) }
        guard k.handler === handler && k.method == method && k.path == path else { return nil }
        if k.headers.sharesStorage(with: headers) {
            jsonMediaType = k.jsonMediaType
            if k.caller != nil, readCache.tokenLifetime == nil, readCache.currentTokens == k.tokenGeneration {
                swap(&caller, &k.caller)
            }
        }
        return match
    }
}
