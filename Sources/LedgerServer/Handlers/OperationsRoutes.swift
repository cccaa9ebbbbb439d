import Foundation
import HTTPServer
import LedgerCore
import LedgerModel

/// `/healthz`, `/readyz`, `/metrics`, `/openapi.yaml`.
enum OperationsRoutes {
    /// The answer of `/healthz`, built once: each request's copy shares its header list and
    /// body (nothing is allocated, copied or freed per request but the reference counts).
    private static let healthy = HTTPResponse(status: 200, contentType: "application/json; charset=utf-8",
                                              body: #"{"status":"ok"}"#)

    static func healthz(_ ctx: RequestContext) throws -> Reply { .response(healthy) }

    static func readyz(_ ctx: RequestContext) throws -> Reply {
        if let notReady = ctx.services.storage.readiness().notReady { return .response(notReady.response) }
        return ctx.json(200, .object(["status": "ready"]))
    }

    static func metrics(_ ctx: RequestContext) throws -> Reply {
        let text = ctx.services.metrics.render(openConnections: ctx.services.connectionCount(),
                                               refusedConnections: ctx.services.refusedConnections.get([:]),
                                               parkedPolls: ctx.services.notifier.parked)
            + (ctx.services.push.map { $0.metrics.render(outboxDepth: $0.outboxDepth()) } ?? "")
            + "# HELP kidledger_read_cache_stamped_hits_total GET answers served from memory after their household's stamp was read unchanged (several processes over PostgreSQL).\n"
            + "# TYPE kidledger_read_cache_stamped_hits_total counter\n"
            + "kidledger_read_cache_stamped_hits_total \(ctx.services.readCache.stampedHitCount)\n"
        return .response(HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: text))
    }

    static func openAPI(_ ctx: RequestContext) throws -> Reply {
        guard let data = FileManager.default.contents(atPath: ctx.services.configuration.openAPIPath) else {
            throw APIError.notFound("openapi.yaml was not found next to the server.")
        }
        var h = HTTPHeaders()
        h.set("Content-Type", openAPIContentType(accept: ctx.request.headers["Accept"]))
        h.set("Vary", "Accept")
        return .response(HTTPResponse(status: 200, headers: h, body: Array(data)))
    }

    /// The document's type: `text/plain` when `Accept` names `text/plain` or `text/*` (with a
    /// q above 0) and not `application/yaml` — for browsers and for clients that read an answer
    /// as text, such as the ones OpenAPI generators make — else YAML's own `application/yaml`.
    static func openAPIContentType(accept: String?) -> String {
        var yaml = false, text = false
        for range in (accept ?? "").split(separator: ",") {
            let parts = range.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            guard let type = parts.first, !parts.dropFirst().contains(where: { $0.hasPrefix("q=") && (Double($0.dropFirst(2)) ?? 1) <= 0 }) else { continue }
            if type == "application/yaml" { yaml = true }
            if type == "text/plain" || type == "text/*" { text = true }
        }
        return text && !yaml ? "text/plain; charset=utf-8" : "application/yaml; charset=utf-8"
    }
}
