import Dispatch
import Foundation
import IDTokenKit
import LedgerCore
import LedgerModel
import Synchronization

/// Sign-in with OpenID Connect identities: the configured providers' verifiers, the nonce
/// check shared by every process (through storage), and — when the operator configured the
/// app's Sign in with Apple key — Apple's authorization codes exchanged for refresh tokens,
/// kept sealed, and revoked through the outbox.
final class IdentityService: Sendable {
    let verifiers: IDTokenVerifiers
    /// The configured providers by name.
    let providers: [String: IDTokenProvider]
    /// nil unless `--apple-team-id`, `--apple-key-id` and `--apple-private-key` are given.
    let apple: AppleRevocation?
    private let storage: any LedgerStorage
    private let logger: Logger
    /// Set once `start()` loaded the key sets: later refreshes that fail are logged by the
    /// caches (the first load's failures are logged by provider).
    private let started = StartFlag()

    final class StartFlag: Sendable {
        private let value = Mutex(false)
        var isSet: Bool { value.withLock { $0 } }
        func set() { value.withLock { $0 = true } }
    }

    /// Apple's token endpoints, the key that seals refresh tokens, and the outbox that
    /// revokes them.
    struct AppleRevocation: Sendable {
        let client: AppleAuthClient
        let sealer: TokenSealer
        let outbox: AppleRevocationOutbox
    }

    /// Reads the providers and the Apple key of `configuration` (throws what is wrong with
    /// them, as the flags name it). Loads no key set yet (`start()` does).
    init(configuration: LedgerAppConfiguration, storage: any LedgerStorage, logger: Logger) throws {
        self.storage = storage
        self.logger = logger
        let providers = try configuration.identityProviders()
        self.providers = Dictionary(uniqueKeysWithValues: providers.map { ($0.name, $0) })
        let started = started
        verifiers = try IDTokenVerifiers(providers: providers, replayGuard: StoredNonceCheck(storage: storage)) { location in
            KeySetCache(location: location, onRefresh: { result in
                if case .failure(let error) = result, started.isSet {
                    logger.log(["event": "identity_keys_unavailable", "keySet": .string(location.description),
                                "error": .string(error.description)])
                }
            })
        }
        if let revocation = try configuration.appleRevocation() {
            let client = try AppleAuthClient(baseURL: revocation.authURL, teamId: revocation.teamId, keyId: revocation.keyId,
                                             privateKeyPath: revocation.privateKeyPath)
            let sealer = try TokenSealer(directory: configuration.dataDirectory)
            let outbox = AppleRevocationOutbox(storage: storage, client: client, sealer: sealer, logger: logger,
                                               retryBase: configuration.appleRevocationRetrySeconds,
                                               pollInterval: configuration.appleRevocationPollSeconds)
            apple = AppleRevocation(client: client, sealer: sealer, outbox: outbox)
        } else {
            apple = nil
        }
    }

    /// Loads every provider's key set (a set that cannot be read is logged, and its
    /// provider answers `unknown_key` until a later refresh reads it), then starts the
    /// revocation outbox.
    func start() {
        for (name, error) in verifiers.loadKeys().sorted(by: { $0.key < $1.key }) {
            logger.log(["event": "identity_keys_unavailable", "provider": .string(name), "error": .string(error.description)])
        }
        started.set()
        apple?.outbox.start()
    }

    func stop() { apple?.outbox.stop() }

    /// Exchanges Sign in with Apple's `code` for a refresh token and keeps it sealed for the
    /// account, off the request path (the sign-in was answered already). Codes live five
    /// minutes and are single-use: one attempt, and one more a few seconds later when
    /// Apple could not be reached; a failure is logged and leaves the sign-in as it is.
    func exchangeAppleCode(_ code: String, clientId: String, accountId: String, identityId: String) {
        guard let apple else { return }
        let storage = storage, logger = logger
        DispatchQueue.global(qos: .utility).async {
            var outcome = apple.client.exchange(code: code, clientId: clientId)
            if case .unreachable = outcome {
                Thread.sleep(forTimeInterval: 3)
                outcome = apple.client.exchange(code: code, clientId: clientId)
            }
            guard case .ok(let answer) = outcome else {
                logger.log(["event": "apple_code_exchange_failed", "account": .string(accountId),
                            "error": .string("\(outcome)")])
                return
            }
            guard let refresh = answer["refresh_token"]?.stringValue, !refresh.isEmpty else {
                logger.log(["event": "apple_code_exchange_failed", "account": .string(accountId),
                            "error": "the answer holds no refresh_token"])
                return
            }
            let id = UUID().lowercased
            let sealed: [UInt8]
            do {
                sealed = try apple.sealer.seal(Array(refresh.utf8), associatedData: AppleTokens.associatedData(id: id, accountId: accountId))
            } catch {
                logger.log(["event": "apple_code_exchange_failed", "account": .string(accountId), "error": .string("\(error)")])
                return
            }
            let keyId = apple.sealer.keyId
            storage.write({ w in
                let now = Timestamp.nowMs()
                // Unlinked (or the account deleted) while Apple answered: revoke it at once.
                let linked = try w.identityReading().identities(account: accountId).contains { $0.id == identityId }
                try w.identityWriting().storeAppleToken(AppleTokenRecord(
                    id: id, accountId: accountId, identityId: linked ? identityId : nil, clientId: clientId, sealed: sealed,
                    keyId: keyId, createdAt: now, revokeAfter: linked ? nil : now, attempts: 0))
                return linked
            }, completion: { result in
                switch result {
                case .success(let linked):
                    if !linked { apple.outbox.kick() }
                case .failure(let error):
                    logger.log(["event": "apple_code_exchange_failed", "account": .string(accountId),
                                "error": .string(String(describing: error))])
                }
            })
        }
    }

    /// Queues the revocation of every Apple refresh token kept for the account, in a write
    /// of its own, and starts the outbox. For account deletion: better call
    /// `LedgerWriting.revokeAppleTokens(accountId:)` inside the deletion's write, then
    /// ``revocationsQueued()``. Answers how many tokens were queued.
    @discardableResult
    func revokeAppleTokens(accountId: String) throws -> Int {
        let queued = try storage.writeHere { w in try w.revokeAppleTokens(accountId: accountId) }
        if queued > 0 { revocationsQueued() }
        return queued
    }

    /// Tells the outbox that revocations were queued (it sends them now rather than at its
    /// next poll).
    func revocationsQueued() { apple?.outbox.kick() }
}

/// The nonce check of `IDTokenVerifier` over storage, so every process sees every nonce.
///
/// It only looks: a nonce is remembered by the write that accepts its token, in the same
/// transaction (`LedgerWriting.signIn`, `linkIdentity`), so a refused request leaves its
/// nonce usable and two requests racing with one nonce cannot both be accepted.
struct StoredNonceCheck: NonceReplayGuard {
    let storage: any LedgerStorage

    func consume(nonceHash: String, until: Date) throws -> Bool {
        let now = Timestamp.nowMs()
        return !(try storage.read { try $0.identityReading().nonceRecorded(hash: nonceHash, now: now) })
    }
}
