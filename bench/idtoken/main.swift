// bench/idtoken.sh: server CPU to verify one ID token with its key cached (target ≤ 100 µs),
// and the cost of refusals next to it (a refused token may cost no more than an accepted one).
// Measures this thread's CPU time (CLOCK_THREAD_CPUTIME_ID) over batches and prints, per
// case, the median and best batch in µs per verification, then one JSON line.
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import IDTokenKit
import IDTokenKitTesting
import LedgerModel

struct MemoryFetcher: KeySetFetcher {
    let document: [UInt8]
    func fetch(_ location: KeySetLocation) throws -> [UInt8] { document }
}

func threadCPUSeconds() -> Double {
    var t = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
}

let arguments = CommandLine.arguments
let batches = arguments.count > 1 ? Int(arguments[1]) ?? 21 : 21
let perBatch = arguments.count > 2 ? Int(arguments[2]) ?? 500 : 500

let rsa = try TestSigningKey.rsa(keyID: "rsa")
let ec = try TestSigningKey.p256(keyID: "ec")
let stranger = try TestSigningKey.rsa(keyID: "rsa")
let issuer = "https://appleid.apple.com"
let audience = "com.example.kidledger"
let now = Date()
let provider = try IDTokenProvider.apple(clientIDs: [audience], keySet: .file("/bench"))
let keys = KeySetCache(location: provider.keySet, fetcher: MemoryFetcher(document: TestSigningKey.keySet([rsa.jwk(), ec.jwk()])))
try keys.load()
let verifier = IDTokenVerifier(provider: provider, keys: keys, replayGuard: InMemoryNonceReplayGuard())

/// Claims shaped like Sign in with Apple's.
func claims(_ changes: JSONObject = [:]) -> JSONObject {
    let t = Int64(now.timeIntervalSince1970)
    var object: JSONObject = [
        "iss": .string(issuer), "aud": .string(audience), "exp": .int(t + 600), "iat": .int(t - 5),
        "sub": "001234.0a1b2c3d4e5f60718293a4b5c6d7e8f9.0123", "c_hash": "mYBTtKbNvHPOBP1tCHT7TQ",
        "email": "x7k2mq9vzp@privaterelay.appleid.com", "email_verified": true, "is_private_email": true,
        "auth_time": .int(t - 6), "nonce_supported": true,
    ]
    for (name, value) in changes.pairs { object[name] = value }
    return object
}

struct Case {
    let name: String
    let tokens: [String]
    let nonces: [String?]
    let expected: String
}

let withNonce = (0..<(batches * perBatch)).map { i in "nonce-\(i)-\(UUID().uuidString)" }
let cases: [Case] = [
    Case(name: "RS256 accepted", tokens: [rsa.sign(claims: claims())], nonces: [nil], expected: "ok"),
    Case(name: "ES256 accepted", tokens: [ec.sign(claims: claims())], nonces: [nil], expected: "ok"),
    Case(name: "RS256 accepted, nonce consumed", tokens: withNonce.map { rsa.sign(claims: claims(["nonce": .string($0)])) },
         nonces: withNonce, expected: "ok"),
    Case(name: "RS256 wrong key", tokens: [stranger.sign(claims: claims())], nonces: [nil], expected: "signature"),
    Case(name: "ES256 wrong key", tokens: [try TestSigningKey.p256(keyID: "ec").sign(claims: claims())], nonces: [nil], expected: "signature"),
    Case(name: "RS256 expired", tokens: [rsa.sign(claims: claims(["exp": .int(Int64(now.timeIntervalSince1970) - 3600)]))],
         nonces: [nil], expected: "expired"),
    Case(name: "RS256 wrong audience", tokens: [rsa.sign(claims: claims(["aud": "com.example.other"]))], nonces: [nil], expected: "audience"),
    Case(name: "RS256 unknown kid", tokens: [rsa.sign(claims: claims(), header: ["kid": "rotated"])], nonces: [nil], expected: "unknown_key"),
    Case(name: "alg none", tokens: [ForgedTokens.withSignature(headerJSON: rsa.headerJSON(["alg": "none"]),
                                                               payloadJSON: JSONValue.object(claims()).serialized())],
         nonces: [nil], expected: "unsupported_algorithm"),
    Case(name: "16 KiB of garbage", tokens: [String(repeating: "A", count: 16 * 1024)], nonces: [nil], expected: "malformed"),
]

func verdict(_ token: String, _ nonce: String?) -> String {
    do { _ = try verifier.verify(token, nonce: nonce, now: now); return "ok" } catch let error as IDTokenError {
        return error.reason
    } catch { return "\(error)" }
}

// The unknown kid's one refresh happens here, outside the timing.
_ = verdict(cases[7].tokens[0], nil)

var results: [String: Double] = [:]
print("case                              median µs   best µs   (\(batches) batches of \(perBatch), thread CPU time)")
for item in cases {
    let first = verdict(item.tokens[0], item.nonces[0])
    guard first == item.expected || (item.nonces[0] != nil && first == "ok") else {
        print("\(item.name): expected \(item.expected), got \(first)")
        exit(1)
    }
    var samples: [Double] = []
    var index = item.nonces[0] == nil ? 0 : 1
    for _ in 0..<batches {
        let start = threadCPUSeconds()
        for _ in 0..<perBatch {
            let i = index % item.tokens.count
            _ = try? verifier.verify(item.tokens[i], nonce: item.nonces[i % item.nonces.count], now: now)
            index += 1
        }
        samples.append((threadCPUSeconds() - start) / Double(perBatch) * 1e6)
    }
    samples.sort()
    results[item.name] = samples[samples.count / 2]
    print(item.name.padding(toLength: 34, withPad: " ", startingAt: 0)
          + String(format: "%9.1f %9.1f", samples[samples.count / 2], samples[0]))
}
let json = results.sorted { $0.key < $1.key }.map { "\"\($0.key)\": \(String(format: "%.1f", $0.value))" }.joined(separator: ", ")
print("{\(json)}")
