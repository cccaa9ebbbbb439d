import Foundation
import LedgerCore
import LedgerModel

/// Recovery codes: `POST /v1/me/recovery-codes` makes a new set (shown once),
/// `GET /v1/me/recovery-codes` says how many are left, and `POST /v1/accounts/recover`
/// (no token) trades one for a new device token.
///
/// Every failure is one answer, 401 `recovery_failed`, and a line in the server's log
/// (`{"event":"recovery_failed","handle":…,"address":…,"reason":…}`) with the reason the
/// caller is not told. Decisions where API.md is silent (also in `openapi.yaml`):
/// - `handle` is read as typed, trimmed and in lower case; a `handle` or `code` that is not
///   a string, or longer than 64 characters, is 422 (the contract's one answer covers what
///   a well-formed request can get wrong).
/// - `deviceName` defaults to `Recovered device`; the new token is listed by
///   `GET /v1/tokens` like any other. Passing the account's token cap is 409
///   `too_many_tokens` (with `revokeOtherTokens` the others go first) and uses no code.
enum RecoveryCodeRoutes {
    static func issue(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        var b = try ctx.optionalBody()
        b.allowOnly([])
        try b.check()
        return ctx.write({ w in try w.issueRecoveryCodes(account: c.accountId, now: Timestamp.nowMs()) }, answer: { issued in
            RequestContext.jsonResponse(201, .object(["codes": .array(issued.codes.map { .string($0.display) }),
                                                      "createdAt": .string(Timestamp.format(ms: issued.createdAt))]))
        })
    }

    static func summary(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let s = try ctx.read { try $0.recoveryCodeSummary(account: c.accountId) }
        return ctx.json(200, .object(["remaining": .int(Int64(s.remaining)),
                                      "createdAt": s.createdAt.map { .string(Timestamp.format(ms: $0)) } ?? .null]))
    }

    static func recover(_ ctx: RequestContext) throws -> Reply {
        let services = ctx.services
        let limits = services.configuration.accountAccess.recoveryLimits
        let address = ClientKey(ctx.clientAddress).counterKey
        let gate = services.accountAccessGate
        if let retry = gate.retryAfter(scope: limits.perAddress.scope, key: address) { throw limited(retry) }
        var b = try ctx.body()
        b.allowOnly(["handle", "code", "deviceName", "revokeOtherTokens"])
        let typedHandle = b.string("handle", required: true)
        let text = b.string("code", required: true)
        if let typedHandle, typedHandle.unicodeScalars.count > 64 { b.fail("handle", "must be at most 64 characters") }
        if let text, text.unicodeScalars.count > 64 { b.fail("code", "must be at most 64 characters") }
        let device = b.name("deviceName")
        let revokeOthers = b.bool("revokeOtherTokens") ?? false
        try b.check()
        let handle = typedHandle!.trimmingCharacters(in: .whitespaces).lowercased()
        if let perHandle = limits.perHandle, let retry = gate.retryAfter(scope: perHandle.scope, key: handle) {
            throw limited(retry)
        }
        let code = HumanCode(reading: text!, length: IssuedRecoveryCodes.length)
        let deviceName = device ?? "Recovered device"
        let maxTokens = services.configuration.maxTokensPerAccount
        let logger = services.logger, notifier = services.notifier, clientAddress = ctx.clientAddress
        return ctx.write({ w in
            try w.recover(handle: handle, code: code, address: address, deviceName: deviceName, revokeOtherTokens: revokeOthers,
                          limits: limits, maxTokens: maxTokens, now: Timestamp.nowMs())
        }, answer: { outcome in
            switch outcome {
            case .recovered(let account, let token, let revoked):
                if !revoked.isEmpty { notifier.notify(tokens: Set(revoked)) }
                logger.log(["event": "recovered", "account": .string(account.id), "handle": .string(handle),
                            "address": .string(clientAddress), "token": .string(token.record.id),
                            "revokedTokens": .int(Int64(revoked.count))])
                return RequestContext.jsonResponse(201, AccountRoutes.createdJSON(account, token))
            case .failed(let reason):
                logger.log(["event": "recovery_failed", "handle": .string(handle), "address": .string(clientAddress),
                            "reason": .string(reason.rawValue)])
                throw failed
            case .limited(let ms, let scope):
                let key = scope == limits.perAddress.scope ? address : handle
                gate.close(scope: scope, key: key, milliseconds: ms)
                logger.log(["event": "recovery_failed", "handle": .string(handle), "address": .string(clientAddress),
                            "reason": .string("rate_limited"), "scope": .string(scope)])
                throw limited(AccountAccessRoutes.seconds(ms))
            }
        })
    }

    /// The one answer to every failed recovery (unknown handle, wrong or used code).
    static var failed: APIError {
        var e = APIError(401, "recovery_failed", "That handle and recovery code do not sign in.")
        e.headers.set("WWW-Authenticate", "Bearer realm=\"kidledger\"")
        return e
    }

    static func limited(_ seconds: Int) -> APIError {
        AccountAccessRoutes.rateLimited("Too many recovery attempts failed.", retryAfter: seconds)
    }
}
