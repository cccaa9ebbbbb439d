import LedgerCore
import LedgerModel

/// `POST /v1/link-codes` (a signed-in device asks for a code) and
/// `POST /v1/link-codes/redeem` (a new device, with no token, trades the code for one).
///
/// Decisions where API.md is silent (also in `openapi.yaml`):
/// - The answer also carries `url`, `kidledger://link?code=XXXX-XXXX-XXXX`, for a QR code.
/// - `deviceName` defaults to `Linked device`. A redemption that would pass the account's
///   token cap is 409 `too_many_tokens` and leaves the code unused.
/// - A code that is not 12 code characters is refused like an unknown one (404
///   `link_code_invalid`); a `code` that is not a string, or longer than 64 characters, is 422.
/// - An account holds at most five live codes; a sixth replaces the oldest.
/// - A code issued for a child's device (`POST …/children/{childId}/devices`) redeems to a
///   child token: `{child: {householdId, childId, name}, token: {id, secret, kind: "child",
///   deviceName, createdAt}}` (see `ChildDeviceRoutes`).
enum LinkCodeRoutes {
    static func issue(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        var b = try ctx.optionalBody()
        b.allowOnly([])
        try b.check()
        return ctx.write({ w in try w.issueLinkCode(account: c.accountId, now: Timestamp.nowMs()) },
                         answer: { issued in RequestContext.jsonResponse(201, issued.json) })
    }

    static func redeem(_ ctx: RequestContext) throws -> Reply {
        let services = ctx.services
        let limits = services.configuration.accountAccess.linkCodeLimits
        let address = ClientKey(ctx.clientAddress).counterKey
        let gate = services.accountAccessGate
        if let retry = gate.retryAfter(scope: limits.perAddress.scope, key: address) { throw limited(retry) }
        var b = try ctx.body()
        b.allowOnly(["code", "deviceName"])
        let text = b.string("code", required: true)
        if let text, text.unicodeScalars.count > 64 { b.fail("code", "must be at most 64 characters") }
        let device = b.name("deviceName")
        try b.check()
        let code = HumanCode(reading: text!, length: LinkCodeRecord.length)
        let deviceName = device ?? "Linked device"
        let maxTokens = services.configuration.maxTokensPerAccount
        return ctx.write({ w in
            try w.redeemLinkCode(code, address: address, deviceName: deviceName, childDeviceName: device, limits: limits,
                                 maxTokens: maxTokens, now: Timestamp.nowMs())
        }, answer: { outcome in
            switch outcome {
            case .redeemed(let account, let token):
                return RequestContext.jsonResponse(201, AccountRoutes.createdJSON(account, token))
            case .pairedChild(let paired):
                return RequestContext.jsonResponse(201, ChildDeviceRoutes.pairedJSON(paired))
            case .refused:
                throw invalid
            case .limited(let ms):
                gate.close(scope: limits.perAddress.scope, key: address, milliseconds: ms)
                throw limited(AccountAccessRoutes.seconds(ms))
            }
        })
    }

    /// The one answer to a used, expired, void, unknown or malformed code.
    static let invalid = APIError(404, "link_code_invalid",
                                  "This code is not valid: it may have been used or have expired. Ask for a new one.")

    static func limited(_ seconds: Int) -> APIError {
        AccountAccessRoutes.rateLimited("Too many codes that did not work were tried from this address.", retryAfter: seconds)
    }
}

extension IssuedLinkCode {
    /// `{code, expiresAt, url}`.
    var json: JSONValue {
        .object(["code": .string(code.display), "expiresAt": .string(Timestamp.format(ms: record.expiresAt)),
                 "url": .string("kidledger://link?code=" + code.display)])
    }
}
