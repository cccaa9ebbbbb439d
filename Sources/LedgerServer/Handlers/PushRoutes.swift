import Foundation
import LedgerCore
import LedgerModel

/// `PUT`/`DELETE /v1/tokens/{tokenId}/push`: a device token's push registration. Only the
/// token's own account reaches it; another account's token id is the same 404 as an
/// unknown one. A child's device (child token) reaches only its own token's registration. Without a configured gateway, push does not exist here (404
/// `push_not_configured`, to a signed-in caller; without a token 401 as everywhere).
enum PushRoutes {
    /// Longest app id (`app_id`: a bundle id, with Sygnal's platform suffix).
    static let maxAppIdLength = 200
    /// APNs device tokens are 32 bytes today; Apple says they may grow: 16 … 256 bytes in hex.
    static let pushKeyHexLengths = 32...512

    static func register(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let gateways = try configuredGateways(ctx)
        let tokenId = try ctx.id("tokenId")
        var b = try ctx.body()
        b.allowOnly(["appId", "pushKey", "gateway"])
        let appId = b.string("appId", required: true)
        if let a = appId, let problem = appIdProblem(a) { b.fail("appId", problem) }
        let key = b.string("pushKey", required: true)
        if let k = key, let problem = pushKeyProblem(k) { b.fail("pushKey", problem) }
        let gateway = b.has("gateway") ? b.string("gateway") : nil
        try b.check()
        if let gateway, !gateways.contains(gateway) {
            var e = APIError(422, "gateway_not_allowed", "This server sends wakes only to the push gateways its operator configured.")
            e.fields = ["gateway": "is not a gateway this server allows"]
            throw e
        }
        let (app, pushKey, target) = (appId!, key!.lowercased(), gateway ?? gateways[0])
        return ctx.write({ w in
            try w.registerPush(token: tokenId, caller: c, appId: app, pushKey: pushKey, gateway: target, now: Timestamp.nowMs())
        }, answer: { _ in RequestContext.noContent() })
    }

    static func unregister(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        _ = try configuredGateways(ctx)
        let tokenId = try ctx.id("tokenId")
        return ctx.write({ w in try w.unregisterPush(token: tokenId, caller: c) }, answer: { _ in RequestContext.noContent() })
    }

    private static func configuredGateways(_ ctx: RequestContext) throws -> [String] {
        let gateways = ctx.services.configuration.pushGateways
        guard !gateways.isEmpty else {
            throw APIError(404, "push_not_configured", "This server has no push gateway configured.")
        }
        return gateways
    }

    /// A bundle id as gateways take it: 1 … 200 of letters, digits, `.`, `-`, `_`.
    static func appIdProblem(_ s: String) -> String? {
        guard !s.isEmpty, s.utf8.count <= maxAppIdLength else { return "must be 1 to \(maxAppIdLength) characters" }
        let ok = s.utf8.allSatisfy { c in
            (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5A) || (c >= 0x61 && c <= 0x7A) || c == 0x2E || c == 0x2D || c == 0x5F
        }
        return ok ? nil : "may hold only letters, digits, '.', '-' and '_'"
    }

    /// An APNs device token in hex: an even number of 32 … 512 hex digits.
    static func pushKeyProblem(_ s: String) -> String? {
        let isHex = s.utf8.allSatisfy { c in (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x46) || (c >= 0x61 && c <= 0x66) }
        guard isHex, pushKeyHexLengths.contains(s.utf8.count), s.utf8.count % 2 == 0 else {
            return "must be the device token in hex (an even number of 32 to 512 hex digits)"
        }
        return nil
    }
}
