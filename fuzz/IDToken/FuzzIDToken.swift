// libFuzzer entry point over IDTokenKit: compact JWT parsing, header rules, key lookup,
// RS256/ES256 verification, claims and nonces; each input is also read as a JWKS document and
// as an `--oidc-provider` value. Built by fuzz/run-idtoken.sh, which compiles this file with
// Sources/IDTokenKit, Sources/IDTokenKitTesting and fuzz/Mutation into one module.
import Foundation
import LedgerModel
import StoreKitJWS

/// The harness's keys (`fuzz/IDToken/keys`, or `$IDTOKEN_FUZZ_KEYS`): fixed, so the seeds
/// and the corpus stay signed across runs.
private let keyFolder = ProcessInfo.processInfo.environment["IDTOKEN_FUZZ_KEYS"]
    ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("keys").path
private let signers: [String: TestSigningKey] = {
    var signers: [String: TestSigningKey] = [:]
    for (kid, file) in [("rsa-1", "rsa.pem"), ("ec-1", "ec.pem")] {
        if let data = FileManager.default.contents(atPath: keyFolder + "/" + file),
           let key = try? TestSigningKey(privateKeyPEM: String(decoding: data, as: UTF8.self), keyID: kid) {
            signers[kid] = key
        }
    }
    return signers
}()

private struct MemoryFetcher: KeySetFetcher {
    let document: [UInt8]
    func fetch(_ location: KeySetLocation) throws -> [UInt8] { document }
}

private let issuer = "https://idp.example"
private let audiences = ["app", "web"]
/// The fuzzer's clock: 2023-11-14T22:13:20Z; the seeds are valid then.
private let fixedNow = Date(timeIntervalSince1970: 1_700_000_000)
private let provider = try! IDTokenProvider(name: "fuzz", issuer: issuer, audiences: audiences, keySet: .file("/fuzz"))
private let keys: KeySetCache = {
    let document = TestSigningKey.keySet(signers.values.sorted { $0.keyID < $1.keyID }.map { $0.jwk(includeAlg: $0.algorithm == "RS256") })
    let cache = KeySetCache(location: provider.keySet, fetcher: MemoryFetcher(document: document))
    _ = try? cache.load()
    return cache
}()

/// `IDTOKEN_FUZZ_VERBOSE=1`: print each input's verdicts (to check that seeds are accepted).
private let verbose = ProcessInfo.processInfo.environment["IDTOKEN_FUZZ_VERBOSE"] == "1"

/// Invariants the harness enforces; a violation aborts so libFuzzer reports it.
private func require(_ condition: Bool, _ message: String) {
    if !condition {
        fputs("invariant violated: \(message)\n", stderr)
        abort()
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzIDTokenTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    require(signers.count == 2 && keys.keys.keys.count == 2, "harness keys not loaded from \(keyFolder)")
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let text = String(decoding: bytes, as: UTF8.self)

    // Tokens: verified without and with a nonce, by a verifier with a fresh replay guard.
    let verifier = IDTokenVerifier(provider: provider, keys: keys, replayGuard: InMemoryNonceReplayGuard(now: { fixedNow }))
    for nonce in [nil, "fuzz-nonce"] as [String?] {
        do {
            let token = try verifier.verify(text, nonce: nonce, now: fixedNow)
            if verbose { fputs("nonce \(nonce ?? "-"): ok\n", stderr) }
            require(text.utf8.count <= 16 * 1024, "over-long token accepted")
            require(token.issuer == issuer && audiences.contains(token.audience), "issuer or audience")
            require(!token.subject.isEmpty, "empty subject")
            require(token.expiresAt.timeIntervalSince(fixedNow) > -provider.leeway, "expired token accepted")
            require(token.issuedAt.timeIntervalSince(fixedNow) <= provider.leeway, "future token accepted")
            require(signers[token.keyID] != nil, "unknown key accepted")
            let header = (try? JSONValue.parse(Base64Codec.decode(Array(text.utf8.prefix { $0 != UInt8(ascii: ".") }), alphabet: .url) ?? []))
            require(header?["alg"]?.stringValue == signers[token.keyID]?.algorithm, "algorithm not the key's")
            require(header?["crit"] == nil, "crit accepted")
            if let nonce {
                require(token.nonce == nonce || token.nonce == IDTokenVerifier.sha256Hex(nonce), "nonce claim not the nonce")
                require((try? verifier.verify(text, nonce: nonce, now: fixedNow)) == nil, "nonce accepted twice")
            }
        } catch let error as IDTokenError {
            if verbose { fputs("nonce \(nonce ?? "-"): \(error.reason)\n", stderr) }
        } catch {
            require(false, "unexpected error type \(error)")
        }
    }

    // Key sets: only RS256 keys of 2048 bits or more and ES256 keys on P-256.
    if let set = try? JSONWebKeySet(json: bytes) {
        for (kid, key) in set.keys {
            require(kid == key.keyID && !kid.isEmpty, "key filed under another kid")
            switch key.algorithm {
            case .rs256: require(key.bits >= 2048 && key.bits <= 8192, "RSA key of \(key.bits) bits kept")
            case .es256: require(key.bits == 256, "EC key of \(key.bits) bits kept")
            }
        }
    }

    // Provider flags: what parses is a valid provider that is not the built-in one.
    if let parsed = try? IDTokenProvider(flag: text) {
        require(parsed.name != "apple" && !parsed.audiences.isEmpty && parsed.audiences.allSatisfy { !$0.isEmpty },
                "invalid provider accepted")
    }
    return 0
}

/// Structure-aware mutation: half the time, decode the header or payload segment, mutate the
/// decoded bytes, re-encode, and (most of the time) sign again with the harness key the header's
/// `kid` names, so mutations reach the claim and nonce checks instead of dying at the signature.
@_cdecl("LLVMFuzzerCustomMutator")
public func fuzzIDTokenCustomMutator(_ data: UnsafeMutablePointer<UInt8>, _ size: Int, _ maxSize: Int, _ seed: UInt32) -> Int {
    var generator = SplitMix(state: UInt64(seed))
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let parts = input.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map(Array.init)
    if generator.next() & 1 == 0, parts.count == 3,
       var header = Base64Codec.decode(parts[0], alphabet: .url), var payload = Base64Codec.decode(parts[1], alphabet: .url) {
        if generator.next() % 4 == 0 { header = mutate(header) } else { payload = mutate(payload) }
        let kid = (try? JSONValue.parse(header))?["kid"]?.stringValue
        let output: [UInt8]
        if generator.next() % 4 != 0, let kid, let signer = signers[kid] {
            output = Array(signer.sign(headerJSON: header, payloadJSON: payload).utf8)
        } else {
            output = Array((Base64Codec.encode(header, alphabet: .url) + "." + Base64Codec.encode(payload, alphabet: .url) + ".").utf8)
                + parts[2]
        }
        if let length = handBack(output, into: data, maxSize: maxSize) { return length }
    }
    return LLVMFuzzerMutate(data, size, maxSize)
}
