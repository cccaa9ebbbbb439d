import Foundation
import LedgerModel

/// Pairing a child's device: a parent with write access asks for a link code scoped to one
/// child; the device redeems it at `POST /v1/link-codes/redeem` like any link code (the same
/// attempt limits, single use, ten minutes) and receives a child token, which belongs to no
/// account. Parents list and revoke a child's devices.
extension LedgerWriting {
    /// Most live devices one child may have paired.
    package static var maxDevicesPerChild: Int { 10 }

    /// `POST …/children/{childId}/devices`: a link code of `account` that pairs a device for `child`.
    package func issueChildLinkCode(household: String, account: String, child: String, deviceName: String?,
                                    now: Int64) throws -> IssuedLinkCode {
        _ = try membership(household: household, account: account, need: .write)
        guard try self.child(household: household, id: child) != nil else { throw LedgerStorageError.childNotFound }
        let issued = try issueLinkCode(account: account, now: now)
        try setLinkCodeChild(hash: issued.code.hash, scope: ChildLinkScope(householdId: household, childId: child,
                                                                             deviceName: deviceName))
        return issued
    }

    /// The child token a redeemed child code pairs, when the code's issuer may still write to
    /// the household and the child is still there; nil otherwise (the code is used up all
    /// the same, and the redemption is refused like any bad code).
    package func pairChildDevice(_ scope: ChildLinkScope, issuer: String, deviceName: String?,
                                 now: Int64) throws -> IssuedChildToken? {
        guard (try? membership(household: scope.householdId, account: issuer, need: .write)) != nil,
              let child = try child(household: scope.householdId, id: scope.childId) else { return nil }
        if try childDeviceCount(household: scope.householdId, child: scope.childId) >= Self.maxDevicesPerChild {
            throw LedgerStorageError.tooManyTokens(limit: Self.maxDevicesPerChild)
        }
        let secret = TokenSecret.generate()
        let record = ChildDeviceRecord(id: UUID().lowercased, householdId: scope.householdId, childId: scope.childId,
                                       deviceName: deviceName ?? scope.deviceName ?? "Child device", pairedBy: issuer,
                                       createdAt: now)
        try insertChildToken(record, hash: TokenSecret.sha256(secret))
        return IssuedChildToken(record: record, secret: secret, childName: child.name)
    }

    /// `DELETE …/children/{childId}/devices/{tokenId}` (a member with write access).
    package func revokeChildDevice(household: String, account: String, child: String, id: String, now: Int64) throws {
        _ = try membership(household: household, account: account, need: .write)
        guard try revokeChildToken(household: household, child: child, id: id, at: now) else {
            throw LedgerStorageError.tokenNotFound
        }
    }
}

extension LedgerReading {
    /// `GET …/children/{childId}/devices` (members).
    package func childDevices(household: String, account: String, child: String, after: TimeAndIdPosition?,
                              limit: Int) throws -> KeyedPage<ChildDeviceRecord, TimeAndIdPosition> {
        _ = try membership(household: household, account: account, need: .read)
        guard try self.child(household: household, id: child) != nil else { throw LedgerStorageError.childNotFound }
        return try childDevices(household: household, child: child, after: after, limit: limit)
    }

    /// Read access to `household` (and, when given, to its child `child`) for `caller`: a
    /// member's `membership(…, need: .read)`; a child token's scope must be that household
    /// and that child, else `householdNotFound` — a child token is told no more about
    /// another household or child than a non-member is. A child caller's answer has
    /// `nil` membership.
    @discardableResult
    package func readAccess(household: String, caller: Caller, child: String? = nil) throws -> Membership? {
        guard let scope = caller.child else {
            return try membership(household: household, account: caller.accountId, need: .read)
        }
        guard scope.householdId == household, child == nil || child == scope.childId else {
            throw LedgerStorageError.householdNotFound
        }
        return nil
    }
}
