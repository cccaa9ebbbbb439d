import Dispatch
import Foundation
import HTTPServer
import LedgerCore
import LedgerModel
import Synchronization
import SystemKit

/// Sends the queued Apple token revocations (`apple_tokens` rows with a due time) to
/// Apple's `/auth/revoke`, on a thread of its own, off every request path.
///
/// A round takes the due rows sealed under this process's key, claims each (an update on
/// the due time it was read with: of several processes one sends it), decrypts it and
/// calls Apple. An answered revocation is forgotten; one Apple could not be reached for,
/// or refused for another reason than an unknown token, is due again after a delay that
/// doubles with each attempt (from ``retryBase`` up to six hours). Rounds run when a
/// revocation is queued in this process (``kick()``) and every ``pollInterval`` seconds
/// (others processes' queued rows, retries).
final class AppleRevocationOutbox: Sendable {
    /// Longest delay between two attempts at one token, in seconds (six hours).
    static let maximumDelay: Double = 6 * 3600
    /// How long a claimed row stays taken by the process that claimed it, in seconds: the
    /// call's timeout with room to spare (a process that died mid-call leaves it due again).
    static let claimLease: Double = 120
    /// Rows taken per round.
    static let batch = 20

    private let storage: any LedgerStorage
    private let client: AppleAuthClient
    private let sealer: TokenSealer
    private let logger: Logger
    /// Seconds before the first retry of a failed revocation.
    let retryBase: Double
    /// Seconds between rounds when nothing is queued here.
    let pollInterval: Double
    private let wake = DispatchSemaphore(value: 0)
    private let state = Mutex<(running: Bool, stopped: Bool)>((false, false))
    private let finished = DispatchSemaphore(value: 0)

    init(storage: any LedgerStorage, client: AppleAuthClient, sealer: TokenSealer, logger: Logger,
         retryBase: Double, pollInterval: Double) {
        self.storage = storage
        self.client = client
        self.sealer = sealer
        self.logger = logger
        self.retryBase = retryBase
        self.pollInterval = pollInterval
    }

    func start() {
        let begin = state.withLock { s -> Bool in
            guard !s.running, !s.stopped else { return false }
            s.running = true
            return true
        }
        guard begin else { return }
        let thread = Thread { [self] in
            nameCurrentThread("kl-apple-revoke")
            while !state.withLock({ $0.stopped }) {
                runRound()
                _ = wake.wait(timeout: .now() + pollInterval)
            }
            finished.signal()
        }
        thread.start()
    }

    /// Starts a round now (a revocation was just queued).
    func kick() { wake.signal() }

    /// Ends the thread after its round (waits for it).
    func stop() {
        let wasRunning = state.withLock { s -> Bool in
            defer { s.stopped = true }
            return s.running && !s.stopped
        }
        guard wasRunning else { return }
        wake.signal()
        finished.wait()
    }

    /// One round; answers how many revocations Apple answered.
    @discardableResult
    func runRound() -> Int {
        let now = Timestamp.nowMs()
        let keyId = sealer.keyId
        let due: [AppleTokenRecord]
        do {
            due = try storage.read { try $0.identityReading().appleRevocationsDue(now: now, keyId: keyId, limit: Self.batch) }
        } catch {
            logger.log(["event": "apple_revocation_error", "error": .string(String(describing: error))])
            return 0
        }
        var revoked = 0
        for row in due where !state.withLock({ $0.stopped }) {
            if attempt(row, now: now) { revoked += 1 }
        }
        return revoked
    }

    /// Claims, sends and records one revocation; whether Apple answered it.
    private func attempt(_ row: AppleTokenRecord, now: Int64) -> Bool {
        guard let due = row.revokeAfter else { return false }
        let lease = now + Int64(Self.claimLease * 1000)
        do {
            guard try storage.writeHere({ w in try w.identityWriting().claimAppleRevocation(id: row.id, due: due, until: lease) })
            else { return false }
        } catch {
            logger.log(["event": "apple_revocation_error", "error": .string(String(describing: error))])
            return false
        }
        guard let plain = sealer.open(row.sealed, associatedData: AppleTokens.associatedData(row)) else {
            // Sealed under this key id but not openable: altered. Nothing can revoke it.
            logger.log(["event": "apple_revocation_abandoned", "tokenRow": .string(row.id), "reason": "cannot be decrypted"])
            try? storage.writeHere { w in try w.identityWriting().deleteAppleToken(id: row.id) }
            return false
        }
        let outcome = client.revoke(refreshToken: String(decoding: plain, as: UTF8.self), clientId: row.clientId)
        let done: Bool
        let error: String
        switch outcome {
        case .ok:
            (done, error) = (true, "")
        case .refused(_, "invalid_grant"):
            // Apple no longer knows the token (revoked, expired): nothing left to revoke.
            (done, error) = (true, "")
        case .refused(let status, let e):
            (done, error) = (false, "HTTP \(status): \(e)")
        case .unreachable(let e):
            (done, error) = (false, e)
        }
        if done {
            try? storage.writeHere { w in try w.identityWriting().deleteAppleToken(id: row.id) }
            logger.log(["event": "apple_token_revoked", "account": .string(row.accountId), "attempts": .int(Int64(row.attempts + 1))])
            return true
        }
        let delay = min(Self.maximumDelay, retryBase * pow(2, Double(min(row.attempts, 30))))
        let next = Timestamp.nowMs() + Int64(delay * 1000)
        try? storage.writeHere { w in try w.identityWriting().postponeAppleRevocation(id: row.id, to: next, error: error) }
        logger.log(["event": "apple_revocation_retry", "account": .string(row.accountId), "error": .string(error),
                    "attempts": .int(Int64(row.attempts + 1)), "retryInMs": .int(Int64(delay * 1000))])
        return false
    }
}

/// How Apple refresh tokens are sealed into their rows.
enum AppleTokens {
    /// The associated data of a row's sealed token: its id and account, so a sealed value
    /// cannot be moved to another row.
    static func associatedData(id: String, accountId: String) -> [UInt8] {
        Array("apple-refresh-token \(id) \(accountId)".utf8)
    }

    static func associatedData(_ row: AppleTokenRecord) -> [UInt8] { associatedData(id: row.id, accountId: row.accountId) }
}
