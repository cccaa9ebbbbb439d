import Foundation
import LedgerCore
import LedgerModel

/// Children's devices: a parent with write access asks for a link code that pairs a device
/// for one child (`POST …/children/{childId}/devices`); the device redeems it at `POST
/// /v1/link-codes/redeem` and receives a child token. Members list a child's devices;
/// members with write access revoke them (the device's next request is 401, its long-poll
/// ends with 401).
enum ChildDeviceRoutes {
    /// `POST /v1/households/{id}/children/{childId}/devices` `{deviceName?}` → 201 `{code, expiresAt, url}`.
    static func issue(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let child = try ctx.id("childId")
        var b = try ctx.optionalBody()
        b.allowOnly(["deviceName"])
        let deviceName = b.name("deviceName")
        try b.check()
        return ctx.write(household: household, { w in
            try w.issueChildLinkCode(household: household, account: c.accountId, child: child, deviceName: deviceName,
                                     now: Timestamp.nowMs())
        }, answer: { issued in RequestContext.jsonResponse(201, issued.json) })
    }

    /// `GET /v1/households/{id}/children/{childId}/devices`: the child's live devices, paged.
    static func list(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let child = try ctx.id("childId")
        return try ctx.list("child-devices \(household) \(child)", read: { r, after, limit in
            try r.childDevices(household: household, account: c.accountId, child: child, after: after, limit: limit)
        }, item: \.json)
    }

    /// `DELETE /v1/households/{id}/children/{childId}/devices/{tokenId}` → 204.
    static func revoke(_ ctx: RequestContext) throws -> Reply {
        let c = try ctx.authenticate()
        let household = try ctx.id("id")
        let child = try ctx.id("childId")
        let token = try ctx.id("tokenId")
        return ctx.write(household: household, { w in
            try w.revokeChildDevice(household: household, account: c.accountId, child: child, id: token, now: Timestamp.nowMs())
        }, answer: { _ in RequestContext.noContent() })
    }

    /// The redemption's answer: `{child: {householdId, childId, name}, token: {id, secret,
    /// kind: "child", deviceName, createdAt}}`.
    static func pairedJSON(_ p: IssuedChildToken) -> JSONValue {
        .object([
            "child": .object(["householdId": .string(p.record.householdId), "childId": .string(p.record.childId),
                              "name": .string(p.childName)]),
            "token": .object(["id": .string(p.record.id), "secret": .string(p.secret), "kind": .string("child"),
                              "deviceName": .string(p.record.deviceName),
                              "createdAt": .string(Timestamp.format(ms: p.record.createdAt))]),
        ])
    }
}

extension Caller {
    /// What a cached answer for this caller is keyed by: the account, or the child token
    /// (child tokens share no account).
    var readerKey: String { child == nil ? accountId : "child-token:" + tokenId }
}
