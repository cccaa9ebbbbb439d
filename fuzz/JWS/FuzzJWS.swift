// libFuzzer entry point over StoreKitJWS: compact parsing, header/x5c decoding, chain
// verification, ES256 verification, policy evaluation, renewal info, and App Store Server
// Notifications V2 with their nested transaction and renewal JWS. Built by fuzz/run-jws.sh, which
// compiles this file together with Sources/StoreKitJWS, fuzz/Mutation and the test chain
// generator (Tests/AppStoreTestSupport/TestCertificateChain.swift) into one module.
import Foundation

/// A test chain generated at start: the mutator signs with its leaf key, and its root is trusted.
private let fuzzChain: TestCertificateChain? = try? TestCertificateChain.generate()

/// Trust anchors: `$JWS_FUZZ_ROOTS` (colon-separated DER/PEM paths), else Apple's test root
/// (which the seeds' chain ends in) and G3 from `Tests/Fixtures/app-store`, and the generated
/// chain's root.
private let fuzzRoots: [TrustedRoot] = {
    if let environment = ProcessInfo.processInfo.environment["JWS_FUZZ_ROOTS"] {
        return environment.split(separator: ":").compactMap { try? TrustedRoot.load(path: String($0)) }
    }
    let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent()   // fuzz/JWS
        .deletingLastPathComponent().deletingLastPathComponent()                   // the repository
        .appendingPathComponent("Tests/Fixtures/app-store").path
    let apple = [fixtures + "/mock-signed/testCA.pem", fixtures + "/AppleRootCA-G3.der"].compactMap { try? TrustedRoot.load(path: $0) }
    let generated = fuzzChain.flatMap { chain in
        (try? CertificateDecoding.derCertificates(pem: Array(chain.rootPEM.utf8))).flatMap { $0.first }
            .flatMap { try? TrustedRoot(der: $0) }
    }
    return apple + (generated.map { [$0] } ?? [])
}()

private let fuzzVerifier = JWSVerifier(trustedRoots: fuzzRoots)
private let fuzzPolicy = SubscriptionPolicy(bundleId: "com.example", productIds: ["pro"],
                                            environments: ["Production", "Sandbox", "Xcode"], appAppleId: 1234)
private let fuzzNotifications = NotificationVerifier(verifier: fuzzVerifier, policy: fuzzPolicy)
private let fixedDate = Date(timeIntervalSince1970: 1_700_000_000)

/// Invariants the harness enforces; a violation aborts so libFuzzer reports it.
private func require(_ condition: Bool, _ message: String) {
    if !condition {
        fputs("invariant violated: \(message)\n", stderr)
        abort()
    }
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWSTestOneInput(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    require(fuzzRoots.count >= 1, "no trusted root loaded; set JWS_FUZZ_ROOTS")
    require(fuzzSigner != nil, "no signing key: the test chain was not generated, or JWS_FUZZ_SIGNING_KEY is unreadable")
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))

    // Canonical base64: whatever decodes must re-encode to exactly the input.
    for alphabet in [Base64Codec.Alphabet.url, .standard] {
        if let decoded = Base64Codec.decode(bytes, alphabet: alphabet) {
            require(Array(Base64Codec.encode(decoded, alphabet: alphabet).utf8) == bytes, "base64 not canonical")
        }
    }

    let compact = String(decoding: bytes, as: UTF8.self)
    for date in [nil, fixedDate] as [Date?] {
        do {
            let payload = try date.map { try fuzzVerifier.verifyTransaction(compact, chainValidationDate: $0) }
                ?? fuzzVerifier.verifyTransaction(compact)
            // A verified payload re-encodes and decodes to itself (dates are whole milliseconds).
            if let json = try? JSONEncoder().encode(payload),
               let again = try? JSONDecoder().decode(JWSTransactionDecodedPayload.self, from: json) {
                require(again == payload, "payload round trip")
            }
            if let status = try? fuzzPolicy.evaluate(payload, ownerAccountId: payload.appAccountToken ?? "", now: fixedDate) {
                require(status.environment != "Xcode", "Xcode environment accepted")
                require(payload.revocationDate == nil, "revoked transaction accepted")
            }
        } catch let error as JWSError {
            _ = error.code
        } catch {
            require(false, "unexpected error type \(error)")
        }
    }

    // Renewal info: the same checks, another payload type.
    if let renewal = try? fuzzVerifier.verify(compact, as: JWSRenewalInfoDecodedPayload.self) {
        require(renewal.signedDate != nil, "renewal info verified without signedDate")
    }

    // Notifications: every nested JWS verified, one environment, never a local one, and
    // only JWSError or PolicyError on refusal.
    do {
        let n = try fuzzNotifications.verify(compact)
        require(!n.uuid.isEmpty && n.uuid == n.uuid.lowercased(), "notification UUID")
        require(!SubscriptionPolicy.neverAcceptedEnvironments.contains(n.environment), "local environment accepted")
        require(n.transaction.map { $0.environment == n.environment && $0.bundleId == "com.example" } ?? true,
                "nested transaction of another environment or app")
        require(n.renewalInfo.map { $0.environment == n.environment } ?? true, "nested renewal of another environment")
        require((n.transaction == nil) == (n.notification.data?.signedTransactionInfo == nil), "nested transaction skipped")
        require((n.renewalInfo == nil) == (n.notification.data?.signedRenewalInfo == nil), "nested renewal skipped")
        if n.environment == "Production" { require(n.notification.data?.appAppleId ?? n.notification.summary?.appAppleId == 1234, "appAppleId") }
    } catch is JWSError {
    } catch is PolicyError {
    } catch {
        require(false, "unexpected notification error type \(error)")
    }
    return 0
}

/// Structure-aware mutation: half the time, decode one JWS segment (or one x5c
/// certificate), mutate the decoded bytes, and re-encode, so mutations reach the JSON,
/// DER and signature layers instead of dying in base64.
@_cdecl("LLVMFuzzerCustomMutator")
public func fuzzJWSCustomMutator(_ data: UnsafeMutablePointer<UInt8>, _ size: Int, _ maxSize: Int, _ seed: UInt32) -> Int {
    var generator = SplitMix(state: UInt64(seed))
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    var parts = input.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map(Array.init)
    if generator.next() & 1 == 0, parts.count == 3 {
        let index = Int(generator.next() % 3)
        if var decoded = Base64Codec.decode(parts[index], alphabet: .url) {
            if index == 0, generator.next() & 1 == 0, let mutatedHeader = mutateCertificate(in: decoded, &generator) {
                decoded = mutatedHeader
            } else if index == 1, generator.next() & 1 == 0, let mutatedPayload = mutateNested(in: decoded, &generator) {
                decoded = mutatedPayload
            } else {
                decoded = mutate(decoded)
            }
            parts[index] = Array(Base64Codec.encode(decoded, alphabet: .url).utf8)
            var output = Array(parts.joined(separator: [UInt8(ascii: ".")]))
            // A changed notification payload is signed again, so its nested JWS get verified.
            if index == 1, (try? JSONSerialization.jsonObject(with: Data(decoded)) as? [String: Any])?["data"] != nil,
               let fuzzSigner, let resigned = resign(String(decoding: output, as: UTF8.self), fuzzSigner) {
                output = Array(resigned.utf8)
            }
            if let length = handBack(output, into: data, maxSize: maxSize) { return length }
        }
    }
    return LLVMFuzzerMutate(data, size, maxSize)
}

/// Mutates the DER of one `x5c` entry inside header JSON, keeping the JSON valid.
private func mutateCertificate(in header: [UInt8], _ generator: inout SplitMix) -> [UInt8]? {
    guard var object = (try? JSONSerialization.jsonObject(with: Data(header))) as? [String: Any],
          var list = object["x5c"] as? [String], !list.isEmpty else { return nil }
    let index = Int(generator.next() % UInt64(list.count))
    guard let der = Base64Codec.decode(Array(list[index].utf8), alphabet: .standard) else { return nil }
    list[index] = Base64Codec.encode(mutate(der), alphabet: .standard)
    object["x5c"] = list
    return (try? JSONSerialization.data(withJSONObject: object)).map(Array.init)
}

/// The key the mutator re-signs what it changed inside a notification with, so the outer
/// signature still verifies and mutations reach the nested transaction and renewal
/// verification: `$JWS_FUZZ_SIGNING_KEY` (a PEM file; the header is kept as it is), else the
/// generated chain's leaf key (the header's `x5c` becomes that chain).
private let fuzzSigner: (signer: ES256Signer, x5c: [String]?)? = {
    if let path = ProcessInfo.processInfo.environment["JWS_FUZZ_SIGNING_KEY"] {
        return (try? ES256Signer(privateKeyPath: path)).map { ($0, nil) }
    }
    guard let chain = fuzzChain, let signer = try? ES256Signer(privateKeyPEM: chain.leafKeyPEM) else { return nil }
    return (signer, chain.x5c)
}()

/// Mutates one decoded segment of a notification's nested `signedTransactionInfo` or
/// `signedRenewalInfo` (re-signing the nested JWS half of the time), keeping the outer JSON
/// valid. Returns the new outer payload; the caller re-signs the outer JWS.
private func mutateNested(in payload: [UInt8], _ generator: inout SplitMix) -> [UInt8]? {
    guard var object = (try? JSONSerialization.jsonObject(with: Data(payload))) as? [String: Any],
          var data = object["data"] as? [String: Any] else { return nil }
    let key = generator.next() & 1 == 0 ? "signedTransactionInfo" : "signedRenewalInfo"
    guard let nested = data[key] as? String else { return nil }
    var parts = Array(nested.utf8).split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false).map(Array.init)
    guard parts.count == 3 else { return nil }
    let index = Int(generator.next() % 3)
    guard let decoded = Base64Codec.decode(parts[index], alphabet: .url) else { return nil }
    parts[index] = Array(Base64Codec.encode(mutate(decoded), alphabet: .url).utf8)
    var text = String(decoding: Array(parts.joined(separator: [UInt8(ascii: ".")])), as: UTF8.self)
    if index < 2, generator.next() & 1 == 0, let fuzzSigner, let resigned = resign(text, fuzzSigner) { text = resigned }
    data[key] = text
    object["data"] = data
    return (try? JSONSerialization.data(withJSONObject: object)).map(Array.init)
}

/// `header.payload` of `compact` signed again with `key`, its header's `x5c` replaced by
/// the key's chain when it has one.
private func resign(_ compact: String, _ key: (signer: ES256Signer, x5c: [String]?)) -> String? {
    let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
    guard parts.count == 3, var header = Base64Codec.decode(Array(parts[0].utf8), alphabet: .url),
          let payload = Base64Codec.decode(Array(parts[1].utf8), alphabet: .url) else { return nil }
    if let x5c = key.x5c, var object = (try? JSONSerialization.jsonObject(with: Data(header))) as? [String: Any] {
        object["x5c"] = x5c
        guard let data = try? JSONSerialization.data(withJSONObject: object) else { return nil }
        header = Array(data)
    }
    return try? key.signer.sign(headerJSON: header, payloadJSON: payload)
}
