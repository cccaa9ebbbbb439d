import LedgerModel

/// Recovery codes: ten single-use codes of 80 bits each, shown once, that sign an account
/// in on a new device when every device is gone. Stored as SHA-256 only; an attempt is one
/// lookup by (handle, hash), whatever is wrong with it, and the hash found is compared in
/// constant time. Failures are counted in the database per client address and per handle,
/// so the limits hold across server processes.
extension LedgerWriting {
    /// `POST /v1/me/recovery-codes`: a new set, replacing any earlier one.
    package func issueRecoveryCodes(account: String, now: Int64) throws -> IssuedRecoveryCodes {
        let codes = (0..<IssuedRecoveryCodes.count).map { _ in HumanCode.generate(length: IssuedRecoveryCodes.length) }
        try replaceRecoveryCodes(account: account, hashes: codes.map(\.hash), at: now)
        return IssuedRecoveryCodes(codes: codes, createdAt: now)
    }

    /// `POST /v1/accounts/recover`: uses one code of `handle`'s account for a new token
    /// (`code` nil: what was typed is no code at all). `revokeOtherTokens`: every other
    /// token of the account is revoked first. Failures are answers (committed with their
    /// counts), never errors; a recovery takes its attempts back.
    package func recover(handle: String, code: HumanCode?, address: String, deviceName: String, revokeOtherTokens: Bool,
                         limits: CodeAttemptLimits, maxTokens: Int = 0, now: Int64) throws -> RecoveryOutcome {
        let perAddress = limits.perAddress
        if perAddress.isOn, let retry = try takeAttempt(perAddress, key: address, now: now) {
            return .limited(retryAfterMs: retry, scope: perAddress.scope)
        }
        if let perHandle = limits.perHandle, perHandle.isOn, let retry = try takeAttempt(perHandle, key: handle, now: now) {
            return .limited(retryAfterMs: retry, scope: perHandle.scope)
        }
        // The same one lookup for every attempt: a malformed code looks up a hash no code has.
        let hash = code?.hash ?? Self.noCodeHash
        let found = try recoveryCandidate(handle: handle, hash: hash)
        guard code != nil else { return .failed(reason: .malformedCode) }
        guard let accountId = found.accountId else { return .failed(reason: .unknownHandle) }
        guard let stored = found.storedHash, TokenSecret.constantTimeEqual(stored, hash) else { return .failed(reason: .wrongCode) }
        guard !found.used, try useRecoveryCode(account: accountId, hash: hash, at: now),
              let account = try account(id: accountId) else { return .failed(reason: .usedCode) }
        if perAddress.isOn { try returnAttempt(scope: perAddress.scope, key: address) }
        if let perHandle = limits.perHandle, perHandle.isOn { try clearAttempts(scope: perHandle.scope, key: handle) }
        let revoked = revokeOtherTokens ? try revokeTokens(account: accountId, now: now) : []
        let token = try createToken(account: accountId, deviceName: deviceName, maxTokens: maxTokens, now: now)
        return .recovered(account, token, revoked: revoked)
    }

    /// Revokes every live token of `account`; answers their ids.
    package func revokeTokens(account: String, now: Int64) throws -> [String] {
        var revoked: [String] = []
        var after: TimeAndIdPosition?
        repeat {
            let page = try activeTokens(account: account, after: after, limit: 1000)
            for t in page.items {
                if try revokeToken(id: t.id, account: account, at: now) { revoked.append(t.id) }
            }
            after = page.next
        } while after != nil
        return revoked
    }

    /// The hash looked up for an attempt whose code is malformed: of no code's canonical form.
    private static var noCodeHash: [UInt8] { TokenSecret.sha256("-") }
}
