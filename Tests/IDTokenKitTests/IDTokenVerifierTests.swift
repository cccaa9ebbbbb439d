import Foundation
import IDTokenKit
import IDTokenKitTesting
import LedgerModel
import StoreKitJWS
import Synchronization
import XCTest

/// Accepted tokens and every refusal of the security bar, each with its `reason`.
final class IDTokenVerifierTests: XCTestCase {
    private let now = Fixtures.now

    /// The verdict for `token`: "ok" or the refusal's reason.
    private func verdict(_ token: String, nonce: String? = nil, verifier: IDTokenVerifier? = nil, at date: Date? = nil) -> String {
        let verifier = verifier ?? Fixtures.verifier().0
        do {
            _ = try verifier.verify(token, nonce: nonce, now: date ?? now)
            return "ok"
        } catch let error as IDTokenError {
            return error.reason
        } catch {
            return "other: \(error)"
        }
    }

    private func encoded(_ object: JSONObject) -> [UInt8] { JSONValue.object(object).serialized() }

    // MARK: accepted

    func testAcceptsRS256AndES256() throws {
        let (verifier, fetcher) = Fixtures.verifier()
        for key in [Fixtures.rsa, Fixtures.ec] {
            let token = try verifier.verify(key.sign(claims: Fixtures.claims()), now: now)
            XCTAssertEqual(token.provider, "test")
            XCTAssertEqual(token.issuer, Fixtures.issuer)
            XCTAssertEqual(token.subject, "001234.abcdef")
            XCTAssertEqual(token.audience, Fixtures.audience)
            XCTAssertEqual(token.email, "kid@example.com")
            XCTAssertEqual(token.emailVerified, true)
            XCTAssertEqual(token.expiresAt, now.addingTimeInterval(600))
            XCTAssertEqual(token.issuedAt, now.addingTimeInterval(-10))
            XCTAssertNil(token.nonce)
            XCTAssertEqual(token.keyID, key.keyID)
            XCTAssertEqual(token.claims["sub"], "001234.abcdef")
        }
        XCTAssertEqual(fetcher.count, 1, "the key set is fetched once and cached")
    }

    func testOneVerifierServesManyThreadsAtOnce() {
        let (verifier, fetcher) = Fixtures.verifier()
        let tokens = [Fixtures.rsa.sign(claims: Fixtures.claims()), Fixtures.ec.sign(claims: Fixtures.claims()),
                      Fixtures.otherRSA.sign(claims: Fixtures.claims())]
        let verdicts = Mutex<[String: Int]>([:])
        let now = self.now
        DispatchQueue.concurrentPerform(iterations: 8) { thread in
            for i in 0..<60 {
                let answer: String
                do { _ = try verifier.verify(tokens[(thread + i) % 3], now: now); answer = "ok" } catch {
                    answer = (error as? IDTokenError)?.reason ?? "\(error)"
                }
                verdicts.withLock { $0[answer, default: 0] += 1 }
            }
        }
        XCTAssertEqual(verdicts.withLock { $0 }, ["ok": 320, "signature": 160])
        XCTAssertEqual(fetcher.count, 1, "concurrent first lookups share one fetch")
    }

    func testAudienceMayBeAnArrayHoldingAConfiguredOne() throws {
        let (verifier, _) = Fixtures.verifier()
        let token = Fixtures.rsa.sign(claims: Fixtures.claims(["aud": .array(["other", "com.example.web"])]))
        XCTAssertEqual(try verifier.verify(token, now: now).audience, "com.example.web")
    }

    func testAppleStringEmailVerifiedAndFractionalTimes() throws {
        let (verifier, _) = Fixtures.verifier()
        let token = Fixtures.ec.sign(claims: Fixtures.claims(["email_verified": "false", "exp": .number("1767226200.5"),
                                                              "is_private_email": "true"]))
        let verified = try verifier.verify(token, now: now)
        XCTAssertEqual(verified.emailVerified, false)
        XCTAssertEqual(verified.expiresAt.timeIntervalSince1970, 1_767_226_200.5)
        XCTAssertEqual(verified.claims["is_private_email"], "true")
    }

    func testOtherTypAndUnknownHeaderMembersAreTolerated() {
        for typ: JSONValue in ["at+jwt", "nonsense", .null, 5] {
            XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(), header: ["typ": typ])), "ok", "\(typ)")
        }
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(), header: ["cty": "JWT", "x-extra": .array([1, 2])])), "ok")
    }

    func testJkuX5uX5cAndJwkHeadersAreNeverUsed() throws {
        let server = try StandInHTTPServer(status: 200, body: Fixtures.keySet)
        defer { server.stop() }
        // Headers pointing at another key set (and embedding the attacker's key) change nothing:
        // the attacker's signature still fails, the real one still verifies.
        let pointers: JSONObject = ["jku": .string(server.url("/jwks").absoluteString),
                                    "x5u": .string(server.url("/cert").absoluteString),
                                    "x5c": .array(["MIIB"]), "jwk": .object(Fixtures.otherRSA.jwk())]
        let (verifier, fetcher) = Fixtures.verifier()
        XCTAssertEqual(verdict(Fixtures.otherRSA.sign(claims: Fixtures.claims(), header: pointers), verifier: verifier), "signature")
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(), header: pointers), verifier: verifier), "ok")
        XCTAssertEqual(fetcher.count, 1)
        XCTAssertEqual(server.paths, [], "nothing a token names is fetched")
    }

    // MARK: forged signatures and algorithms

    func testTokenSignedWithAnotherKeyIsRefused() {
        XCTAssertEqual(verdict(Fixtures.otherRSA.sign(claims: Fixtures.claims())), "signature")
        XCTAssertEqual(verdict(Fixtures.otherEC.sign(claims: Fixtures.claims())), "signature")
    }

    func testAlgNoneIsRefused() {
        let payload = encoded(Fixtures.claims())
        for alg: JSONValue in ["none", "None", "NONE", .null] {
            let header = Fixtures.rsa.headerJSON(["alg": alg])
            XCTAssertEqual(verdict(ForgedTokens.withSignature(headerJSON: header, payloadJSON: payload)), "unsupported_algorithm")
            // Even carrying a signature that verifies over the same input with the named key.
            let signed = Fixtures.rsa.sign(headerJSON: header, payloadJSON: payload)
            XCTAssertEqual(verdict(signed), "unsupported_algorithm")
        }
    }

    func testHS256WithThePublicKeyAsSecretIsRefused() {
        let payload = encoded(Fixtures.claims())
        let secrets: [[UInt8]] = [Array(Fixtures.rsa.publicKeyPEM.utf8), Fixtures.rsa.bigNumber("n"),
                                  encoded(Fixtures.rsa.jwk())]
        for alg in ["HS256", "HS384", "HS512"] {
            for secret in secrets {
                let header = Fixtures.rsa.headerJSON(["alg": .string(alg)])
                XCTAssertEqual(verdict(ForgedTokens.hmacSHA256(headerJSON: header, payloadJSON: payload, secret: secret)),
                               "unsupported_algorithm", alg)
            }
        }
    }

    func testOtherAsymmetricAlgorithmsAreRefused() {
        for alg in ["RS384", "RS512", "PS256", "ES384", "ES512", "EdDSA", "rs256", "RS256 ", ""] {
            let token = Fixtures.rsa.sign(claims: Fixtures.claims(), header: ["alg": .string(alg)])
            XCTAssertEqual(verdict(token), "unsupported_algorithm", alg)
        }
    }

    func testKidOfAKeyPinnedToAnotherAlgorithmIsRefused() {
        // ES256 signed by an attacker's P-256 key, naming the RSA key (and the reverse).
        XCTAssertEqual(verdict(Fixtures.otherEC.sign(claims: Fixtures.claims(), header: ["kid": "rsa-1"])), "unsupported_algorithm")
        XCTAssertEqual(verdict(Fixtures.otherRSA.sign(claims: Fixtures.claims(), header: ["kid": "ec-1"])), "unsupported_algorithm")
        // The honest key with the other algorithm's name is refused the same way.
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(), header: ["alg": "ES256"])), "unsupported_algorithm")
    }

    func testKeyOfAWeakSetIsNeverUsed() {
        let (verifier, fetcher) = Fixtures.verifier()
        XCTAssertEqual(verdict(Fixtures.weakRSA.sign(claims: Fixtures.claims()), verifier: verifier), "unknown_key")
        XCTAssertEqual(verifier.keys.keys.skipped.map(\.keyID), ["weak"])
        XCTAssertEqual(fetcher.count, 1, "the set was fetched once; the weak key's refusal refreshed nothing new within the minute")
    }

    func testTamperedPayloadOrHeaderIsRefused() {
        let token = Fixtures.rsa.sign(claims: Fixtures.claims())
        let parts = token.split(separator: ".").map(String.init)
        let otherPayload = Base64Codec.encode(encoded(Fixtures.claims(["sub": "someone-else"])), alphabet: .url)
        XCTAssertEqual(verdict([parts[0], otherPayload, parts[2]].joined(separator: ".")), "signature")
        let otherHeader = Base64Codec.encode(Fixtures.rsa.headerJSON(["typ": "jwt"]), alphabet: .url)
        XCTAssertEqual(verdict([otherHeader, parts[1], parts[2]].joined(separator: ".")), "signature")
        // One bit of the signature.
        var signature = Base64Codec.decode(Array(parts[2].utf8), alphabet: .url)!
        signature[10] ^= 1
        XCTAssertEqual(verdict([parts[0], parts[1], Base64Codec.encode(signature, alphabet: .url)].joined(separator: ".")), "signature")
    }

    func testSignaturesOfTheWrongLengthOrEncodingAreRefused() {
        for key in [Fixtures.rsa, Fixtures.ec] {
            let header = key.headerJSON(), payload = encoded(Fixtures.claims())
            let good = Base64Codec.decode(Array(key.sign(headerJSON: header, payloadJSON: payload).split(separator: ".")[2].utf8),
                                          alphabet: .url)!
            for signature in [[], Array(good.dropLast()), good + [0], [0] + good, good + good] {
                XCTAssertEqual(verdict(ForgedTokens.withSignature(headerJSON: header, payloadJSON: payload, signature: signature)),
                               "signature", "\(key.algorithm) \(signature.count) bytes")
            }
        }
        // ES256 in DER, as OpenSSL makes it, instead of JOSE's raw r ‖ s.
        let header = Fixtures.ec.headerJSON(), payload = encoded(Fixtures.claims())
        let input = Base64Codec.encode(header, alphabet: .url) + "." + Base64Codec.encode(payload, alphabet: .url)
        let raw = Fixtures.ec.signature(for: Array(input.utf8))
        func integer(_ bytes: ArraySlice<UInt8>) -> [UInt8] {
            let body = bytes.first! & 0x80 != 0 ? [0] + Array(bytes) : Array(bytes)
            return [0x02, UInt8(body.count)] + body
        }
        let body = integer(raw[0..<32]) + integer(raw[32..<64])
        let der = [0x30, UInt8(body.count)] + body
        XCTAssertEqual(verdict(ForgedTokens.withSignature(headerJSON: header, payloadJSON: payload, signature: der)), "signature")
        // r ‖ s of zeros, and of the group order's bytes.
        XCTAssertEqual(verdict(ForgedTokens.withSignature(headerJSON: header, payloadJSON: payload,
                                                         signature: [UInt8](repeating: 0, count: 64))), "signature")
        XCTAssertEqual(verdict(ForgedTokens.withSignature(headerJSON: header, payloadJSON: payload,
                                                         signature: [UInt8](repeating: 0xFF, count: 64))), "signature")
    }

    // MARK: keys

    func testUnknownKidRefreshesOnceThenIsUnknown() {
        let uptime = FakeUptime()
        let (verifier, fetcher) = Fixtures.verifier(uptime: uptime)
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims()), verifier: verifier), "ok")
        XCTAssertEqual(fetcher.count, 1)
        uptime.advance(60)
        let stranger = Fixtures.otherRSA.sign(claims: Fixtures.claims(), header: ["kid": "rotated-in"])
        XCTAssertEqual(verdict(stranger, verifier: verifier), "unknown_key")
        XCTAssertEqual(fetcher.count, 2, "one refresh for the unknown kid")
        XCTAssertEqual(verdict(stranger, verifier: verifier), "unknown_key")
        XCTAssertEqual(fetcher.count, 2, "no second refresh within the minute")
    }

    func testMissingKidIsUnknownWithoutRefresh() {
        let (verifier, fetcher) = Fixtures.verifier()
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(), header: ["kid": .null]), verifier: verifier), "unknown_key")
        XCTAssertEqual(fetcher.count, 0)
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(), header: ["kid": 7])), "malformed")
    }

    func testRotatedKeyIsFoundByTheRefresh() {
        let next = try! TestSigningKey.p256(keyID: "ec-2")
        let fetcher = CountingFetcher(Fixtures.keySet, TestSigningKey.keySet([Fixtures.rsa.jwk(), next.jwk()]))
        let uptime = FakeUptime()
        let keys = KeySetCache(location: .file("/k"), fetcher: fetcher, uptime: uptime.clock)
        let verifier = IDTokenVerifier(provider: Fixtures.provider, keys: keys, replayGuard: InMemoryNonceReplayGuard())
        XCTAssertEqual(verdict(Fixtures.ec.sign(claims: Fixtures.claims()), verifier: verifier), "ok")
        // Within a minute of the first fetch a new kid is not looked for; after it, it is.
        XCTAssertEqual(verdict(next.sign(claims: Fixtures.claims()), verifier: verifier), "unknown_key")
        XCTAssertEqual(fetcher.count, 1)
        uptime.advance(60)
        XCTAssertEqual(verdict(next.sign(claims: Fixtures.claims()), verifier: verifier), "ok")
        XCTAssertEqual(fetcher.count, 2)
        // The key that left the set is gone with it (unknown, and no refresh within the minute).
        XCTAssertEqual(verdict(Fixtures.ec.sign(claims: Fixtures.claims()), verifier: verifier), "unknown_key")
        XCTAssertEqual(fetcher.count, 2)
    }

    // MARK: claims

    func testExpiredTokensAreRefusedAfterTheLeeway() {
        let exp = Int64(now.timeIntervalSince1970)
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(["exp": .int(exp - 61)]))), "expired")
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(["exp": .int(exp - 60)]))), "expired")
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(["exp": .int(exp - 59)]))), "ok")
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(["exp": .int(exp - 100_000), "iat": .int(exp - 100_600)]))),
                       "expired")
    }

    func testFutureIatAndNbfAreNotYetValid() {
        let t = Int64(now.timeIntervalSince1970)
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(["iat": .int(t + 61)]))), "not_yet_valid")
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(["iat": .int(t + 60)]))), "ok")
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(["nbf": .int(t + 61)]))), "not_yet_valid")
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(["nbf": .int(t + 30)]))), "ok")
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(["iat": .int(t + 86_400), "exp": .int(t + 90_000)]))),
                       "not_yet_valid")
    }

    func testWrongIssuerIsRefused() {
        for iss: JSONValue in ["https://issuer.example/", "http://issuer.example", "https://ISSUER.example", "https://evil.example",
                               "", 5, .array(["https://issuer.example"])] {
            XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(["iss": iss]))), "issuer", "\(iss)")
        }
    }

    func testWrongAudienceIsRefused() {
        for aud: JSONValue in ["com.example.other", "COM.EXAMPLE.APP", "", .array([]), .array(["other"]), .array(["com.example.app", 5]), 5, .null] {
            let expected = aud.isNull ? "malformed" : "audience"
            XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(["aud": aud.isNull ? .null : aud]))), expected, "\(aud)")
        }
    }

    func testMissingOrMistypedClaimsAreMalformed() {
        for claim in ["iss", "sub", "aud", "exp", "iat"] {
            XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims([claim: .null]))), "malformed", "no \(claim)")
        }
        for (claim, value) in [("sub", ""), ("sub", 5), ("exp", "1767226200"), ("exp", true), ("iat", "x"), ("nbf", .array([1])),
                               ("exp", .number("1e400"))] as [(String, JSONValue)] {
            XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims([claim: value]))), "malformed", "\(claim) \(value)")
        }
    }

    // MARK: nonce

    func testNonceMatchesItsSHA256OrItself() throws {
        let nonce = "n-0S6_WzA2Mj"
        let hash = "0823a09b54cb9381561068b00aaf4e539b3f54604631d3e6a820879b6b04cc19"
        XCTAssertEqual(ForgedTokens.sha256(Array(nonce.utf8)).map { String(format: "%02x", $0) }.joined(), hash)
        let (verifier, _) = Fixtures.verifier()
        XCTAssertEqual(try verifier.verify(Fixtures.rsa.sign(claims: Fixtures.claims(["nonce": .string(hash)])), nonce: nonce,
                                           now: now).nonce, hash)
        XCTAssertEqual(verdict(Fixtures.ec.sign(claims: Fixtures.claims(["nonce": "plain-nonce"])), nonce: "plain-nonce",
                               verifier: verifier), "ok")
    }

    func testReusedNonceIsRefused() {
        let (verifier, _) = Fixtures.verifier()
        let token = Fixtures.rsa.sign(claims: Fixtures.claims(["nonce": "once"]))
        XCTAssertEqual(verdict(token, nonce: "once", verifier: verifier), "ok")
        XCTAssertEqual(verdict(token, nonce: "once", verifier: verifier), "nonce")
        // Another token carrying the same nonce as its hash is a replay of the nonce too.
        let hashed = Fixtures.ec.sign(claims: Fixtures.claims(["nonce": .string(sha256Hex("once"))]))
        XCTAssertEqual(verdict(hashed, nonce: "once", verifier: verifier), "nonce")
        // Without a nonce the claim is not checked, and nothing is consumed.
        XCTAssertEqual(verdict(token, verifier: verifier), "ok")
    }

    func testMissingOrWrongNonceIsRefused() {
        let (verifier, _) = Fixtures.verifier()
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims()), nonce: "given", verifier: verifier), "nonce")
        for claim: JSONValue in ["other", .string(sha256Hex("given").uppercased()), .string(sha256Hex("given ")), 5, .null] {
            let token = Fixtures.rsa.sign(claims: Fixtures.claims(["nonce": claim]))
            XCTAssertEqual(verdict(token, nonce: "given", verifier: verifier), "nonce", "\(claim)")
        }
        let token = Fixtures.rsa.sign(claims: Fixtures.claims(["nonce": ""]))
        XCTAssertEqual(verdict(token, nonce: "", verifier: verifier), "nonce", "an empty nonce is no nonce")
        let long = String(repeating: "n", count: IDTokenVerifier.maximumNonceLength + 1)
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(["nonce": .string(long)])), nonce: long), "nonce")
    }

    func testNonceIsConsumedOnlyByAnAcceptedToken() {
        let (verifier, _) = Fixtures.verifier()
        let expired = Fixtures.rsa.sign(claims: Fixtures.claims(["nonce": "n1", "exp": .int(Int64(now.timeIntervalSince1970) - 100)]))
        XCTAssertEqual(verdict(expired, nonce: "n1", verifier: verifier), "expired")
        XCTAssertEqual(verdict(Fixtures.otherRSA.sign(claims: Fixtures.claims(["nonce": "n1"])), nonce: "n1", verifier: verifier),
                       "signature")
        XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(["nonce": "n1"])), nonce: "n1", verifier: verifier), "ok")
    }

    func testReplayGuardFailureIsPassedOn() {
        struct Broken: NonceReplayGuard {
            struct Failure: Error {}
            func consume(nonceHash: String, until: Date) throws -> Bool { throw Failure() }
        }
        let (verifier, _) = Fixtures.verifier(replayGuard: Broken())
        XCTAssertTrue(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(["nonce": "n"])), nonce: "n", verifier: verifier)
            .hasPrefix("other: "))
    }

    func testReplayGuardIsToldTheHashAndTheTokensEnd() throws {
        final class Recorder: NonceReplayGuard {
            let calls = Mutex<[(String, Date)]>([])
            func consume(nonceHash: String, until: Date) throws -> Bool { calls.withLock { $0.append((nonceHash, until)) }; return true }
        }
        let recorder = Recorder()
        let (verifier, _) = Fixtures.verifier(replayGuard: recorder)
        _ = try verifier.verify(Fixtures.rsa.sign(claims: Fixtures.claims(["nonce": "abc"])), nonce: "abc", now: now)
        let calls = recorder.calls.withLock { $0 }
        XCTAssertEqual(calls.map(\.0), [sha256Hex("abc")])
        XCTAssertEqual(calls.map(\.1), [now.addingTimeInterval(600 + 60)])
    }

    // MARK: malformed

    func testMalformedTokensAreRefusedAsMalformed() {
        let token = Fixtures.rsa.sign(claims: Fixtures.claims())
        let parts = token.split(separator: ".").map(String.init)
        let cases: [String] = [
            "", ".", "..", "...", parts[0], parts[0] + "." + parts[1], token + ".", token + "." + parts[2],
            "." + parts[1] + "." + parts[2], parts[0] + ".." + parts[2],
            parts[0] + "=." + parts[1] + "." + parts[2],            // padding
            parts[0] + "." + parts[1] + "." + parts[2] + "=",
            parts[0].replacingOccurrences(of: "e", with: "+") + "." + parts[1] + "." + parts[2], // standard alphabet
            " " + token, token + "\n",
            Base64Codec.encode(Array("not json".utf8), alphabet: .url) + "." + parts[1] + "." + parts[2],
            Base64Codec.encode(Array("[\"RS256\"]".utf8), alphabet: .url) + "." + parts[1] + "." + parts[2],
            Base64Codec.encode(Array(#"{"alg":"RS256","kid":"rsa-1","alg":"RS256"}"#.utf8), alphabet: .url) + "." + parts[1] + "." + parts[2],
        ]
        for text in cases { XCTAssertEqual(verdict(text), "malformed", text) }
    }

    func testNonCanonicalBase64TrailingBitsAreMalformed() {
        // 256 signature bytes end in two symbols carrying one byte: the last symbol's four low
        // bits are unused. Lenient decoders read the same bytes with them set; here that is refused.
        var parts = Fixtures.rsa.sign(claims: Fixtures.claims()).split(separator: ".").map(String.init)
        let table = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        XCTAssertEqual(parts[2].utf8.count % 4, 2)
        let last = table.firstIndex(of: parts[2].utf8.last!)!
        XCTAssertEqual(last & 0x0F, 0)
        parts[2] = String(parts[2].dropLast()) + String(UnicodeScalar(table[last | 1]))
        XCTAssertEqual(verdict(parts.joined(separator: ".")), "malformed")
    }

    func testPayloadIsReadOnlyUnderAValidSignature() {
        let header = Fixtures.rsa.headerJSON()
        for payload in ["not json", "[1]", #"{"iss":"a","iss":"b"}"#, "{\"sub\":\"\u{FFFF}\""] {
            let signed = Fixtures.rsa.sign(headerJSON: header, payloadJSON: Array(payload.utf8))
            XCTAssertEqual(verdict(signed), "malformed", payload)
            let forged = Fixtures.otherRSA.sign(headerJSON: header, payloadJSON: Array(payload.utf8))
            XCTAssertEqual(verdict(forged), "signature", payload)
        }
        // Duplicate claims never reach the claim checks, whichever value a lenient reader keeps.
        let duplicate = #"{"iss":"https://evil.example","sub":"x","aud":"com.example.app","exp":9999999999,"iat":1,"iss":"https://issuer.example"}"#
        XCTAssertEqual(verdict(Fixtures.rsa.sign(headerJSON: header, payloadJSON: Array(duplicate.utf8))), "malformed")
    }

    func testCritHeaderIsRefused() {
        for crit: JSONValue in [.array(["exp"]), .array(["b64"]), .array([]), "exp"] {
            XCTAssertEqual(verdict(Fixtures.rsa.sign(claims: Fixtures.claims(), header: ["crit": crit, "exp": 1, "b64": true])),
                           "malformed", "\(crit)")
        }
    }

    func testHugeTokenIsRefusedBeforeAnyWork() {
        let (verifier, fetcher) = Fixtures.verifier()
        let padding = String(repeating: "A", count: 20_000)
        let huge = Fixtures.rsa.sign(claims: Fixtures.claims(["pad": .string(padding)]))
        XCTAssertEqual(verdict(huge, verifier: verifier), "malformed")
        XCTAssertEqual(verdict(String(repeating: "A", count: 10_000_000), verifier: verifier), "malformed")
        XCTAssertEqual(fetcher.count, 0, "no key was looked up")
        // Just under the limit is read.
        let fits = Fixtures.rsa.sign(claims: Fixtures.claims(["pad": .string(String(repeating: "A", count: 11_000))]))
        XCTAssertLessThanOrEqual(fits.utf8.count, 16 * 1024)
        XCTAssertEqual(verdict(fits, verifier: verifier), "ok")
    }

    func testEveryReasonIsAnAPIReason() {
        XCTAssertEqual(IDTokenError.allCases.map(\.reason),
                       ["malformed", "unsupported_algorithm", "unknown_key", "signature", "issuer", "audience", "expired",
                        "not_yet_valid", "nonce"])
    }

    private func sha256Hex(_ text: String) -> String {
        ForgedTokens.sha256(Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }
}
