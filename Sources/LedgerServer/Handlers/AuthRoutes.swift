import Foundation
import IDTokenKit
import LedgerCore
import LedgerModel

/// Sign-in with an OpenID Connect identity (`POST /v1/auth/{provider}`, no bearer token).
///
/// Verification may fetch a key set, so the route runs on the workers (`Routes.swift`).
/// The order: the provider (404 `unknown_provider`), the body (422), the token (401 `invalid_id_token` with `reason`, counted against the client address's
/// failed authentications: past the limit 429), then the identity: linked, a new token of
/// its account (200); not linked without `handle`, 404 `identity_not_linked`; with one,
/// registration rules as `POST /v1/accounts` (403 `registration_closed`, 429
/// `registration_rate_limited`) and a new account linked to it (201, or 409 `handle_taken`).
enum AuthRoutes {
    /// The largest body, in bytes: an ID token is at most 16 KiB.
    static let bodyLimit = 64 * 1024
    /// The longest authorization code accepted, in characters.
    static let maximumCodeLength = 4096

    static func signIn(_ ctx: RequestContext) throws -> Reply {
        let name = ctx.params["provider"] ?? ""
        let (identity, verifier) = try IdentityHTTP.verifier(ctx, name)
        var b = try ctx.body()
        b.allowOnly(["idToken", "nonce", "authorizationCode", "handle", "displayName", "deviceName"])
        let idToken = b.string("idToken", required: true)
        let nonce = b.string("nonce")
        let code = b.string("authorizationCode")
        if let code, code.isEmpty || code.count > maximumCodeLength {
            b.fail("authorizationCode", "must be 1 to \(maximumCodeLength) characters")
        }
        let handle = b.string("handle")
        if let h = handle, case .failure(let e) = Validation.handle(h) { b.fail("handle", e.message) }
        let displayName = b.name("displayName")
        let deviceName = b.name("deviceName") ?? "default"
        try b.check()

        let verified = try IdentityHTTP.verify(ctx, verifier, idToken!, nonce: nonce)
        let linked = try ctx.read { try $0.identityReading().identity(issuer: verified.issuer, subject: verified.subject) }
        var registration: (handle: String, displayName: String)?
        if linked == nil {
            guard let handle else {
                throw APIError(404, "identity_not_linked",
                               "This identity is linked to no account: send a handle to create one, or link it from a signed-in device.")
            }
            try AccountRoutes.admitRegistration(ctx)
            registration = (handle, displayName ?? handle)
        }
        let register = registration
        let maxTokens = ctx.services.configuration.maxTokensPerAccount
        let failure = IdentityHTTP.failureMapper(ctx)
        // Sign in with Apple's code, exchanged once the sign-in is answered (when the
        // operator configured the app's key).
        let appleCode = name == IDTokenProvider.appleName && identity.apple != nil ? code : nil
        let clientId = verified.audience
        let v = IdentityHTTP.identity(verified, nonce: nonce, leeway: verifier.provider.leeway)
        return ctx.write({ w in
            do {
                return try w.signIn(v, register: register, deviceName: deviceName, maxTokens: maxTokens, now: Timestamp.nowMs())
            } catch let e as IdentityStorageError { throw failure(e) }
        }, answer: { outcome in
            if let appleCode {
                identity.exchangeAppleCode(appleCode, clientId: clientId, accountId: outcome.account.id,
                                           identityId: outcome.identity.id)
            }
            return RequestContext.jsonResponse(outcome.created ? 201 : 200, .object([
                "account": outcome.account.json, "token": outcome.token.json, "created": .bool(outcome.created)]))
        })
    }
}

/// What the identity routes share: finding a provider's verifier, verifying a token with
/// the failed-authentication limit, and the HTTP answers of identity refusals.
enum IdentityHTTP {
    /// The identity service and the verifier of provider `name`; 404 `unknown_provider`.
    static func verifier(_ ctx: RequestContext, _ name: String) throws -> (IdentityService, IDTokenVerifier) {
        guard let identity = ctx.services.identity, let verifier = identity.verifiers[name] else {
            throw APIError(404, "unknown_provider", "This server offers no identity provider named \"\(name)\".")
        }
        return (identity, verifier)
    }

    /// Verifies `idToken` (with `nonce` when sent): a refusal is 401 `invalid_id_token`
    /// with its `reason`, counted against the client address like a failed bearer token
    /// (429 `rate_limited` past the limit; a valid token is always accepted).
    static func verify(_ ctx: RequestContext, _ verifier: IDTokenVerifier, _ idToken: String, nonce: String?) throws -> VerifiedIDToken {
        do {
            return try verifier.verify(idToken, nonce: nonce)
        } catch let e as IDTokenError {
            throw invalidToken(e.reason, services: ctx.services, clientAddress: ctx.clientAddress)
        }
    }

    /// 401 `invalid_id_token` with `reason`, or 429 `rate_limited` while the address is past
    /// its failed authentications (this one is counted).
    static func invalidToken(_ reason: String, services: Services, clientAddress: String) -> APIError {
        services.authLimiter.refusal(clientAddress) {
            var e = APIError(401, "invalid_id_token", "The ID token was refused (\(reason)).")
            e.extra["reason"] = .string(reason)
            e.headers.set("WWW-Authenticate", "Bearer realm=\"kidledger\"")
            return e
        }
    }

    /// The identity to sign in with or link: the token's issuer and subject, and the nonce
    /// to remember with the accepting write (its SHA-256, until the token's expiry plus the
    /// leeway, after which the token is refused as expired anyway).
    static func identity(_ verified: VerifiedIDToken, nonce: String?, leeway: TimeInterval) -> VerifiedIdentity {
        let record = nonce.map { nonce in
            NonceRecord(hash: TokenSealer.hex(TokenSealer.sha256(Array(nonce.utf8))),
                        expiresAt: Int64((verified.expiresAt.timeIntervalSince1970 + leeway) * 1000))
        }
        return VerifiedIdentity(provider: verified.provider, issuer: verified.issuer, subject: verified.subject, nonce: record)
    }

    /// Maps a refusal of the identity rules to its answer (the write's body throws it, so
    /// the write leaves nothing behind). A replayed nonce counts as a failed authentication.
    static func failureMapper(_ ctx: RequestContext) -> @Sendable (IdentityStorageError) -> APIError {
        let services = ctx.services, address = ctx.clientAddress
        return { error in
            switch error {
            case .identityInUse:
                return APIError(409, "identity_in_use", "This identity is linked to another account.")
            case .identityNotFound:
                return APIError.notFound("No such identity.")
            case .identityNotLinked:
                return APIError(404, "identity_not_linked",
                                "This identity is linked to no account: send a handle to create one, or link it from a signed-in device.")
            case .nonceReplayed:
                return invalidToken(IDTokenError.nonce.reason, services: services, clientAddress: address)
            case .unsupported:
                return APIError.internal()
            }
        }
    }
}

extension IdentityRecord {
    /// The API JSON form (the subject is not shown).
    var json: JSONValue {
        .object(["id": .string(id), "provider": .string(provider), "issuer": .string(issuer),
                 "linkedAt": .string(Timestamp.format(ms: linkedAt))])
    }
}
