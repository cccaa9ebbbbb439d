import LedgerModel

/// Linking a device from a signed-in one: a short code, readable aloud, single use, live
/// for ten minutes, redeemed without a token for a new token of the same account.
///
/// Guessing is bounded twice over, in the database so that every server process counts
/// alike: a client address may fail `perAddress.limit` redemptions per window, and every
/// failed redemption counts against the live codes of its bucket (the code's first two
/// characters), a code that has seen `perCode` failures being void. A code's 50 secret bits
/// then face at most `perCode` guesses, however many addresses try. A void code costs its
/// owner a new one; nothing else.
extension LedgerWriting {
    /// `POST /v1/link-codes`: a new code of `account`.
    package func issueLinkCode(account: String, now: Int64) throws -> IssuedLinkCode {
        let code = HumanCode.generate(length: LinkCodeRecord.length)
        let record = LinkCodeRecord(accountId: account, bucket: code.prefix(LinkCodeRecord.bucketLength), createdAt: now,
                                    expiresAt: now + LinkCodeRecord.lifetimeMs)
        try insertLinkCode(record, hash: code.hash)
        return IssuedLinkCode(code: code, record: record)
    }

    /// `POST /v1/link-codes/redeem`: a new token named `deviceName` for the code's account
    /// (`code` nil: what was typed is no code at all). Every attempt costs one counted
    /// attempt and one lookup by hash; a refusal is committed with its counts (it is an
    /// answer, not an error), and used, expired, void, unknown and malformed codes are
    /// refused alike. A code that redeems takes its attempt back: only failures count.
    /// A code issued for a child's device (`issueChildLinkCode`) pairs a child token instead
    /// (`childDeviceName`: the name the device gave, if any).
    package func redeemLinkCode(_ code: HumanCode?, address: String, deviceName: String, childDeviceName: String? = nil,
                                limits: CodeAttemptLimits, maxTokens: Int = 0, now: Int64) throws -> LinkCodeRedemption {
        let perAddress = limits.perAddress
        if perAddress.isOn, let retry = try takeAttempt(perAddress, key: address, now: now) {
            return .limited(retryAfterMs: retry)
        }
        guard let code else { return .refused }
        let hash = code.hash
        // A code issued for a child's device keeps its child beside it (read before the take deletes it).
        let childScope = try linkCodeChild(hash: hash)
        if let found = try takeLinkCode(hash: hash, now: now, maxFailures: limits.perCode),
           TokenSecret.constantTimeEqual(found.storedHash, hash), let account = try account(id: found.accountId) {
            if let childScope {
                guard let paired = try pairChildDevice(childScope, issuer: account.id, deviceName: childDeviceName,
                                                       now: now) else { return .refused }
                if perAddress.isOn { try returnAttempt(scope: perAddress.scope, key: address) }
                return .pairedChild(paired)
            }
            if perAddress.isOn { try returnAttempt(scope: perAddress.scope, key: address) }
            let token = try createToken(account: account.id, deviceName: deviceName, maxTokens: maxTokens, now: now)
            return .redeemed(account, token)
        }
        try countLinkCodeFailure(bucket: code.prefix(LinkCodeRecord.bucketLength), now: now)
        return .refused
    }
}
