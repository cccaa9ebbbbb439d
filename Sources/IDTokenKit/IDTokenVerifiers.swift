/// Every configured provider's verifier, by name: what `POST /v1/auth/{provider}` looks up
/// (no verifier: `unknown_provider`).
///
/// Providers reading the same key set location share one ``KeySetCache``; all share one
/// ``NonceReplayGuard``.
public struct IDTokenVerifiers: Sendable {
    private let verifiers: [String: IDTokenVerifier]

    /// - Parameters:
    ///   - providers: the providers, names unique (throws ``ProviderSpecError`` otherwise).
    ///   - replayGuard: remembers accepted nonces for all of them.
    ///   - makeKeys: makes the key cache of a location, default a ``KeySetCache`` with a
    ///     ``SystemKeySetFetcher`` and default intervals.
    public init(providers: [IDTokenProvider], replayGuard: any NonceReplayGuard,
                makeKeys: (KeySetLocation) -> KeySetCache = { KeySetCache(location: $0) }) throws(ProviderSpecError) {
        var caches: [KeySetLocation: KeySetCache] = [:]
        var verifiers: [String: IDTokenVerifier] = [:]
        for provider in providers {
            guard verifiers[provider.name] == nil else {
                throw ProviderSpecError("provider \(provider.name) is configured twice")
            }
            let keys = caches[provider.keySet] ?? makeKeys(provider.keySet)
            caches[provider.keySet] = keys
            verifiers[provider.name] = IDTokenVerifier(provider: provider, keys: keys, replayGuard: replayGuard)
        }
        self.verifiers = verifiers
    }

    /// The verifier of the provider named `name`, if configured.
    public subscript(name: String) -> IDTokenVerifier? { verifiers[name] }

    /// The configured providers' names, sorted.
    public var names: [String] { verifiers.keys.sorted() }

    /// Loads every key set now (at start-up); returns the providers whose set could not be
    /// read, with why. Those answer `unknown_key` until a later refresh reads their set.
    public func loadKeys() -> [String: KeySetError] {
        var failures: [String: KeySetError] = [:]
        var loaded: [ObjectIdentifier: KeySetError?] = [:]
        for (name, verifier) in verifiers.sorted(by: { $0.key < $1.key }) {
            let id = ObjectIdentifier(verifier.keys)
            if loaded[id] == nil {
                do { try verifier.keys.load(); loaded[id] = .some(nil) } catch { loaded[id] = .some(error) }
            }
            if case let error?? = loaded[id] { failures[name] = error }
        }
        return failures
    }
}
