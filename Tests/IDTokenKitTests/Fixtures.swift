import Foundation
import IDTokenKit
import IDTokenKitTesting
import LedgerModel
import Synchronization

/// Keys, claims and verifiers shared by the tests: keys are made once (RSA generation costs).
enum Fixtures {
    static let issuer = "https://issuer.example"
    static let audience = "com.example.app"
    /// A fixed "now": 2026-01-01T00:00:00Z.
    static let now = Date(timeIntervalSince1970: 1_767_225_600)

    static let rsa = try! TestSigningKey.rsa(keyID: "rsa-1")
    static let ec = try! TestSigningKey.p256(keyID: "ec-1")
    /// Keys of the same kinds that are in no key set.
    static let otherRSA = try! TestSigningKey.rsa(keyID: "rsa-1")
    static let otherEC = try! TestSigningKey.p256(keyID: "ec-1")
    /// A 512-bit RSA key, published in the set but never usable.
    static let weakRSA = try! TestSigningKey.rsa(bits: 512, keyID: "weak")

    static let keySet = TestSigningKey.keySet([rsa.jwk(), ec.jwk(includeAlg: false), weakRSA.jwk()])

    static let provider = try! IDTokenProvider(name: "test", issuer: issuer, audiences: [audience, "com.example.web"],
                                                keySet: .file("/nonexistent/jwks.json"))

    /// Valid claims at ``now`` with `changes` applied (`.null` removes a claim).
    static func claims(_ changes: JSONObject = [:]) -> JSONObject {
        var object: JSONObject = ["iss": .string(issuer), "sub": "001234.abcdef", "aud": .string(audience),
                                  "iat": .int(Int64(now.timeIntervalSince1970) - 10),
                                  "exp": .int(Int64(now.timeIntervalSince1970) + 600),
                                  "email": "kid@example.com", "email_verified": true]
        for (name, value) in changes.pairs { object[name] = value.isNull ? JSONValue?.none : value }
        return object
    }

    /// A verifier over ``keySet`` served by a counting fetcher, its rate limit on `uptime`,
    /// its nonces expiring at ``now``.
    static func verifier(keySet: [UInt8] = Fixtures.keySet, uptime: FakeUptime = FakeUptime(),
                         replayGuard: any NonceReplayGuard = InMemoryNonceReplayGuard(now: { Fixtures.now }))
        -> (IDTokenVerifier, CountingFetcher) {
        let fetcher = CountingFetcher(keySet)
        let keys = KeySetCache(location: provider.keySet, fetcher: fetcher, uptime: uptime.clock)
        return (IDTokenVerifier(provider: provider, keys: keys, replayGuard: replayGuard), fetcher)
    }
}

/// Serves key sets from memory (the last one again once the list runs out) and counts fetches.
final class CountingFetcher: KeySetFetcher {
    private let state: Mutex<(documents: [[UInt8]], count: Int)>
    /// Called inside each fetch before it answers (a test can block it there).
    let onFetch: (@Sendable () -> Void)?

    init(_ documents: [UInt8]..., onFetch: (@Sendable () -> Void)? = nil) {
        state = Mutex((documents, 0))
        self.onFetch = onFetch
    }

    var count: Int { state.withLock { $0.count } }

    func fetch(_ location: KeySetLocation) throws -> [UInt8] {
        onFetch?()
        return try state.withLock { state in
            state.count += 1
            guard let first = state.documents.first else { throw KeySetError("no document") }
            if state.documents.count > 1 { state.documents.removeFirst() }
            return first
        }
    }
}

/// A mutable monotonic clock for the key cache's rate limit.
final class FakeUptime: Sendable {
    private let value = Mutex<TimeInterval>(1_000)
    func advance(_ seconds: TimeInterval) { value.withLock { $0 += seconds } }
    var now: TimeInterval { value.withLock { $0 } }
    var clock: @Sendable () -> TimeInterval { { self.now } }
}
