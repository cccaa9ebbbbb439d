import LedgerCore
import LedgerModel

/// The caller's linked identities: list, link another, unlink one.
enum IdentityRoutes {
    /// Every identity of the account, oldest link first; not paged (an account has a few).
    static func list(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let items = try ctx.read { try $0.identityReading().identities(account: c.accountId) }
        return ctx.json(200, .object(["items": .array(items.map(\.json)), "nextCursor": .null]))
    }

    /// Links the identity of a verified token: 201 the identity; 200 when it is linked to
    /// the caller already; 409 `identity_in_use` when it is another account's.
    static func link(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        var b = try ctx.body()
        b.allowOnly(["provider", "idToken", "nonce"])
        let provider = b.string("provider", required: true)
        let idToken = b.string("idToken", required: true)
        let nonce = b.string("nonce")
        try b.check()
        let (_, verifier) = try IdentityHTTP.verifier(ctx, provider!)
        let verified = try IdentityHTTP.verify(ctx, verifier, idToken!, nonce: nonce)
        let v = IdentityHTTP.identity(verified, nonce: nonce, leeway: verifier.provider.leeway)
        let failure = IdentityHTTP.failureMapper(ctx)
        return ctx.write({ w in
            do { return try w.linkIdentity(v, account: c.accountId, now: Timestamp.nowMs()) } catch let e as IdentityStorageError {
                throw failure(e)
            }
        }, answer: { linked in RequestContext.jsonResponse(linked.created ? 201 : 200, linked.0.json) })
    }

    /// Unlinks one of the caller's identities (another account's is 404), queueing the
    /// revocation of Apple tokens that came with it.
    static func unlink(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let id = try ctx.id("identityId")
        let failure = IdentityHTTP.failureMapper(ctx)
        let identity = ctx.services.identity
        return ctx.write({ w in
            do { try w.unlinkIdentity(id: id, account: c.accountId, now: Timestamp.nowMs()) } catch let e as IdentityStorageError {
                throw failure(e)
            }
        }, answer: { _ in
            identity?.revocationsQueued()
            return RequestContext.noContent()
        })
    }
}
