// libFuzzer entry point over StoreKitJWS: compact parsing, header/x5c decoding, chain
// verification, ES256 verification and policy evaluation. Built by fuzz/run-jws.sh, which
// compiles this file together with Sources/StoreKitJWS into one module.
import Foundation

/// Trust anchors: `$JWS_FUZZ_ROOTS` (colon-separated DER/PEM paths), else Apple's test root
/// and G3 from `<repo>/../shared/vectors/app-store`.
private let fuzzRoots: [TrustedRoot] = {
    let environment = ProcessInfo.processInfo.environment["JWS_FUZZ_ROOTS"]
    let vectors = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("shared/vectors/app-store").path
    let paths = environment.map { $0.split(separator: ":").map(String.init) }
        ?? [vectors + "/test-chain/testCA.pem", vectors + "/AppleRootCA-G3.der"]
    return paths.compactMap { try? TrustedRoot.load(path: $0) }
}()

private let fuzzVerifier = JWSVerifier(trustedRoots: fuzzRoots)
private let fuzzPolicy = SubscriptionPolicy(bundleId: "com.example", productIds: ["pro"],
                                            environments: ["Production", "Sandbox", "Xcode"])
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
    return 0
}

@_silgen_name("LLVMFuzzerMutate")
private func LLVMFuzzerMutate(_ data: UnsafeMutablePointer<UInt8>, _ size: Int, _ maxSize: Int) -> Int

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
            } else {
                decoded = mutate(decoded)
            }
            parts[index] = Array(Base64Codec.encode(decoded, alphabet: .url).utf8)
            let output = Array(parts.joined(separator: [UInt8(ascii: ".")]))
            if output.count <= maxSize {
                output.withUnsafeBufferPointer { data.update(from: $0.baseAddress!, count: output.count) }
                return output.count
            }
        }
    }
    return LLVMFuzzerMutate(data, size, maxSize)
}

/// Mutates `bytes` with libFuzzer's mutator in a scratch buffer with room to grow.
private func mutate(_ bytes: [UInt8]) -> [UInt8] {
    var buffer = bytes + [UInt8](repeating: 0, count: bytes.count / 2 + 16)
    let length = buffer.withUnsafeMutableBufferPointer { LLVMFuzzerMutate($0.baseAddress!, bytes.count, $0.count) }
    return Array(buffer.prefix(length))
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

/// A tiny deterministic generator seeded by libFuzzer.
private struct SplitMix {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
