import Foundation
import IDTokenKit
import IDTokenKitTesting
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
@testable import LedgerStorageSQLite
import XCTest

/// Sign-in with OpenID Connect identities and linked identities over HTTP (both backends):
/// every answer of API.md's "Identity" for `POST /v1/auth/{provider}` and
/// `/v1/me/identities`, each forgery with its `reason`.
final class IdentityTests: XCTestCase {
    var s: TestServer!
    var jwks = ""

    override func setUpWithError() throws {
        jwks = try IdentityFixture.keySetFile()
        s = try server()
    }

    override func tearDown() {
        s?.stop()
        try? FileManager.default.removeItem(atPath: jwks)
    }

    /// A server offering `test` (keys from the fixture's file) and Apple (the same keys).
    func server(_ configure: (inout LedgerAppConfiguration) -> Void = { _ in }) throws -> TestServer {
        try TestServer { c in
            c.oidcProviders = [IdentityFixture.spec(jwks)]
            c.appleClientIds = [IdentityFixture.appleClient]
            c.appleJWKS = jwks
            c.authFailuresPerMinute = 1000
            configure(&c)
        }
    }

    func body(_ r: TestServer.Reply) -> String { String(decoding: r.body, as: UTF8.self) }

    // MARK: sign-up and sign-in

    func testSignUpWithAHandleThenSignInAgainReachesTheSameAccount() throws {
        let sub = IdentityFixture.subject()
        let first = s.auth(["idToken": .string(IdentityFixture.token(sub)), "handle": "idfirst", "displayName": "First",
                            "deviceName": "Phone"])
        XCTAssertEqual(first.status, 201, body(first))
        XCTAssertEqual(first.json["created"], .bool(true))
        XCTAssertEqual(first.json["account"]?["handle"]?.stringValue, "idfirst")
        XCTAssertEqual(first.json["account"]?["displayName"]?.stringValue, "First")
        XCTAssertEqual(first.json["token"]?["deviceName"]?.stringValue, "Phone")
        let accountId = try XCTUnwrap(first.json["account"]?["id"]?.stringValue)
        let token = try XCTUnwrap(first.json["token"]?["secret"]?.stringValue)
        XCTAssertEqual(s.call("GET", "/v1/me", token: token).status, 200, "the new token works")

        // Again, with another token for the same subject (and a handle, which is ignored).
        let again = s.auth(["idToken": .string(IdentityFixture.token(sub, key: IdentityFixture.ec)), "handle": "other"])
        XCTAssertEqual(again.status, 200, body(again))
        XCTAssertEqual(again.json["created"], .bool(false))
        XCTAssertEqual(again.json["account"]?["id"]?.stringValue, accountId)
        XCTAssertEqual(again.json["token"]?["deviceName"]?.stringValue, "default")
        XCTAssertNotEqual(again.json["token"]?["secret"]?.stringValue, token, "a new device token")

        let list = s.call("GET", "/v1/me/identities", token: token)
        XCTAssertEqual(list.status, 200)
        let items = try XCTUnwrap(list.json["items"]?.arrayValue)
        XCTAssertEqual(items.count, 1)
        XCTAssertEqual(items.first?["provider"]?.stringValue, "test")
        XCTAssertEqual(items.first?["issuer"]?.stringValue, IdentityFixture.issuer)
        XCTAssertNotNil(items.first?["linkedAt"]?.stringValue)
        XCTAssertNil(items.first?["subject"], "the subject is not shown")
        XCTAssertEqual(list.json["nextCursor"], .null)
    }

    func testUnlinkedWithoutHandleIs404AndTheSameTokenAndNonceThenSignUp() {
        let sub = IdentityFixture.subject(), nonce = "n-" + UUID().uuidString
        let token = IdentityFixture.token(sub, ["nonce": .string(IdentityFixture.sha256Hex(nonce))])
        let unlinked = s.auth(["idToken": .string(token), "nonce": .string(nonce)])
        XCTAssertEqual(unlinked.status, 404, body(unlinked))
        XCTAssertEqual(unlinked.code, "identity_not_linked")
        // A refused request leaves the nonce usable: the app asks for a handle and sends again.
        let created = s.auth(["idToken": .string(token), "nonce": .string(nonce), "handle": "idnonce"])
        XCTAssertEqual(created.status, 201, body(created))
        XCTAssertEqual(created.json["account"]?["displayName"]?.stringValue, "idnonce", "the display name defaults to the handle")
        let replay = s.auth(["idToken": .string(token), "nonce": .string(nonce)])
        XCTAssertEqual(replay.status, 401, body(replay))
        XCTAssertEqual(replay.code, "invalid_id_token")
        XCTAssertEqual(replay.json["reason"]?.stringValue, "nonce")
        // Without the nonce the token signs in (the claim is not checked then).
        XCTAssertEqual(s.auth(["idToken": .string(token)]).status, 200)
    }

    func testUnknownProviderIs404() {
        for name in ["nosuch", "APPLE", "a%2Fb"] {
            let r = s.auth(name, ["idToken": .string(IdentityFixture.token(IdentityFixture.subject()))])
            XCTAssertEqual(r.status, 404, name)
            XCTAssertEqual(r.code, "unknown_provider", name)
        }
        let link = s.call("POST", "/v1/me/identities", token: s.signup("idunknown").token,
                          json: .obj(["provider": "nosuch", "idToken": "x"]))
        XCTAssertEqual(link.status, 404)
        XCTAssertEqual(link.code, "unknown_provider")
    }

    func testBodiesAreCheckedStrictly() {
        let cases: [(JSONValue, String)] = [
            (.obj(["handle": "x"]), "idToken"),
            (.obj(["idToken": 5]), "idToken"),
            (.obj(["idToken": "x", "handle": "NO"]), "handle"),
            (.obj(["idToken": "x", "extra": 1]), "extra"),
            (.obj(["idToken": "x", "authorizationCode": ""]), "authorizationCode"),
            (.obj(["idToken": "x", "displayName": "  "]), "displayName"),
        ]
        for (json, field) in cases {
            let r = s.call("POST", "/v1/auth/test", json: json)
            XCTAssertEqual(r.status, 422, "\(json)")
            XCTAssertNotNil(r.json["fields"]?[field], "\(json): \(body(r))")
        }
    }

    // MARK: refusals of forged and unfit tokens

    /// Each forgery is 401 `invalid_id_token` with its reason.
    func testEachForgeryIsRefusedWithItsReason() {
        let sub = IdentityFixture.subject()
        let rsa = IdentityFixture.rsa, claims = IdentityFixture.claims(subject: sub)
        let payload = JSONValue.object(claims).serialized()
        let now = Int64(Date().timeIntervalSince1970)
        let cases: [(String, String, String?)] = [
            ("not a token", "malformed", nil),
            (IdentityFixture.otherRSA.sign(claims: claims), "signature", nil),
            (ForgedTokens.withSignature(headerJSON: rsa.headerJSON(["alg": "none"]), payloadJSON: payload), "unsupported_algorithm", nil),
            (ForgedTokens.hmacSHA256(headerJSON: rsa.headerJSON(["alg": "HS256"]), payloadJSON: payload,
                                     secret: Array(rsa.publicKeyPEM.utf8)), "unsupported_algorithm", nil),
            // ES256, signed by the set's own P-256 key, naming the RSA key.
            (IdentityFixture.ec.sign(claims: claims, header: ["kid": "rsa-1"]), "unsupported_algorithm", nil),
            (rsa.sign(claims: claims, header: ["kid": "no-such-key"]), "unknown_key", nil),
            (IdentityFixture.weakRSA.sign(claims: claims), "unknown_key", nil),
            (IdentityFixture.token(sub, ["exp": .int(now - 3600), "iat": .int(now - 7200)]), "expired", nil),
            (IdentityFixture.token(sub, ["iat": .int(now + 3600), "exp": .int(now + 7200)]), "not_yet_valid", nil),
            (IdentityFixture.token(sub, ["aud": "com.example.other"]), "audience", nil),
            (IdentityFixture.token(sub, ["iss": "https://evil.example"]), "issuer", nil),
            (IdentityFixture.token(sub), "nonce", "a-nonce-the-token-lacks"),
            (IdentityFixture.token(sub, ["nonce": "another"]), "nonce", "a-nonce"),
        ]
        for (token, reason, nonce) in cases {
            var members: JSONObject = ["idToken": .string(token), "handle": "forger"]
            if let nonce { members["nonce"] = .string(nonce) }
            let r = s.call("POST", "/v1/auth/test", json: .object(members))
            XCTAssertEqual(r.status, 401, "\(reason): \(body(r))")
            XCTAssertEqual(r.code, "invalid_id_token", reason)
            XCTAssertEqual(r.json["reason"]?.stringValue, reason, body(r))
            XCTAssertNotNil(r.header("WWW-Authenticate"))
        }
        XCTAssertEqual(try s.int("SELECT count(*) FROM accounts WHERE handle = 'forger'"), 0, "no forgery made an account")
    }

    func testAKeySetOfOnly512BitRSAKeysVerifiesNothing() throws {
        let weakOnly = FileManager.default.temporaryDirectory.appendingPathComponent("weak-\(UUID().uuidString).json").path
        try Data(TestSigningKey.keySet([IdentityFixture.weakRSA.jwk()])).write(to: URL(fileURLWithPath: weakOnly))
        defer { try? FileManager.default.removeItem(atPath: weakOnly) }
        let weak = try TestServer { $0.oidcProviders = [IdentityFixture.spec(weakOnly, name: "weak")] }
        defer { weak.stop() }
        let r = weak.auth("weak", ["idToken": .string(IdentityFixture.weakRSA.sign(claims: IdentityFixture.claims(subject: "s"))),
                                   "handle": "weakling"])
        XCTAssertEqual(r.status, 401, body(r))
        XCTAssertEqual(r.json["reason"]?.stringValue, "unknown_key")
    }

    func testFailedVerificationsCountTowardTheAddressLimit() throws {
        let limited = try server { $0.authFailuresPerMinute = 3 }
        defer { limited.stop() }
        let forged = IdentityFixture.otherRSA.sign(claims: IdentityFixture.claims(subject: "s"))
        for _ in 0..<3 { XCTAssertEqual(limited.auth(["idToken": .string(forged)]).status, 401) }
        let refused = limited.auth(["idToken": .string(forged)])
        XCTAssertEqual(refused.status, 429, body(refused))
        XCTAssertEqual(refused.code, "rate_limited")
        XCTAssertNotNil(refused.header("Retry-After"))
        // A valid token is always served.
        let valid = limited.auth(["idToken": .string(IdentityFixture.token(IdentityFixture.subject())), "handle": "stillok"])
        XCTAssertEqual(valid.status, 201, body(valid))
        // Failed bearer tokens and failed ID tokens share the count.
        XCTAssertEqual(limited.call("GET", "/v1/me", token: "kl_" + String(repeating: "A", count: 43)).status, 429)
    }

    // MARK: registration rules

    func testRegistrationClosedIs403ButLinkedIdentitiesSignIn() throws {
        let closed = try server { $0.registration = .closed }
        defer { closed.stop() }
        let r = closed.auth(["idToken": .string(IdentityFixture.token(IdentityFixture.subject())), "handle": "closedout"])
        XCTAssertEqual(r.status, 403, body(r))
        XCTAssertEqual(r.code, "registration_closed")
        // An account the administrator made links an identity, which then signs in.
        let secret = try closed.app.services.storage.writeAndWait { w in
            try w.createAccount(handle: "admin-made", displayName: "Admin", deviceName: "cli", now: Timestamp.nowMs()).1.secret
        }
        let sub = IdentityFixture.subject()
        XCTAssertEqual(closed.call("POST", "/v1/me/identities", token: secret,
                                   json: .obj(["provider": "test", "idToken": .string(IdentityFixture.token(sub))])).status, 201)
        XCTAssertEqual(closed.auth(["idToken": .string(IdentityFixture.token(sub))]).status, 200)
    }

    func testHandleTakenIs409AndTheRegistrationLimitApplies() throws {
        _ = s.signup("taken")
        let r = s.auth(["idToken": .string(IdentityFixture.token(IdentityFixture.subject())), "handle": "taken"])
        XCTAssertEqual(r.status, 409, body(r))
        XCTAssertEqual(r.code, "handle_taken")

        let limited = try server { $0.registrationsPerHour = 1 }
        defer { limited.stop() }
        XCTAssertEqual(limited.auth(["idToken": .string(IdentityFixture.token(IdentityFixture.subject())), "handle": "one"]).status, 201)
        let second = limited.auth(["idToken": .string(IdentityFixture.token(IdentityFixture.subject())), "handle": "two"])
        XCTAssertEqual(second.status, 429, body(second))
        XCTAssertEqual(second.code, "registration_rate_limited")
        XCTAssertNotNil(second.header("Retry-After"))
    }

    // MARK: linking

    func testLinkASecondIdentityThenInUseElsewhereThenUnlink() throws {
        let (_, alex) = s.signup("alexid")
        let (_, sam) = s.signup("samid")
        let apple = IdentityFixture.subject(), other = IdentityFixture.subject()
        // Alex signs up with the test provider's identity, then links an Apple identity.
        let signedUp = s.auth(["idToken": .string(IdentityFixture.token(other)), "handle": "alexsecond"])
        XCTAssertEqual(signedUp.status, 201)
        let nonce = "link-" + UUID().uuidString
        let linked = s.call("POST", "/v1/me/identities", token: alex,
                            json: .obj(["provider": "apple", "idToken": .string(IdentityFixture.appleToken(apple, nonce: nonce)),
                                        "nonce": .string(nonce)]))
        XCTAssertEqual(linked.status, 201, body(linked))
        XCTAssertEqual(linked.json["provider"]?.stringValue, "apple")
        XCTAssertEqual(linked.json["issuer"]?.stringValue, "https://appleid.apple.com")
        let identityId = try XCTUnwrap(linked.json["id"]?.stringValue)
        // Linking it again to Alex: 200, the same identity.
        let again = s.call("POST", "/v1/me/identities", token: alex,
                           json: .obj(["provider": "apple", "idToken": .string(IdentityFixture.appleToken(apple))]))
        XCTAssertEqual(again.status, 200, body(again))
        XCTAssertEqual(again.json["id"]?.stringValue, identityId)
        // Sam cannot take it, nor the other one.
        for token in [IdentityFixture.appleToken(apple)] {
            let inUse = s.call("POST", "/v1/me/identities", token: sam, json: .obj(["provider": "apple", "idToken": .string(token)]))
            XCTAssertEqual(inUse.status, 409, body(inUse))
            XCTAssertEqual(inUse.code, "identity_in_use")
        }
        let inUse = s.call("POST", "/v1/me/identities", token: sam,
                           json: .obj(["provider": "test", "idToken": .string(IdentityFixture.token(other))]))
        XCTAssertEqual(inUse.code, "identity_in_use")
        // The Apple identity signs in to Alex's account.
        let signIn = s.auth("apple", ["idToken": .string(IdentityFixture.appleToken(apple))])
        XCTAssertEqual(signIn.status, 200, body(signIn))
        XCTAssertEqual(signIn.json["account"]?["handle"]?.stringValue, "alexid")
        // A forged token does not link.
        let forged = s.call("POST", "/v1/me/identities", token: sam,
                            json: .obj(["provider": "test", "idToken": .string(IdentityFixture.otherRSA.sign(claims: IdentityFixture.claims(subject: "x")))]))
        XCTAssertEqual(forged.status, 401)
        XCTAssertEqual(forged.json["reason"]?.stringValue, "signature")
        // Sam cannot unlink Alex's identity; malformed ids are 404 too.
        XCTAssertEqual(s.call("DELETE", "/v1/me/identities/\(identityId)", token: sam).code, "not_found")
        XCTAssertEqual(s.call("DELETE", "/v1/me/identities/not-an-id", token: alex).status, 404)
        XCTAssertEqual(s.call("DELETE", "/v1/me/identities/\(identityId)", token: alex).status, 204)
        XCTAssertEqual(s.call("DELETE", "/v1/me/identities/\(identityId)", token: alex).status, 404, "already unlinked")
        XCTAssertEqual(s.call("GET", "/v1/me/identities", token: alex).json["items"], .array([]))
        let gone = s.auth("apple", ["idToken": .string(IdentityFixture.appleToken(apple))])
        XCTAssertEqual(gone.code, "identity_not_linked")
        // Now Sam may link it.
        XCTAssertEqual(s.call("POST", "/v1/me/identities", token: sam,
                              json: .obj(["provider": "apple", "idToken": .string(IdentityFixture.appleToken(apple))])).status, 201)
    }

    func testIdentityRoutesNeedAToken() {
        XCTAssertEqual(s.call("GET", "/v1/me/identities").status, 401)
        XCTAssertEqual(s.call("POST", "/v1/me/identities", json: .obj(["provider": "test", "idToken": "x"])).status, 401)
        XCTAssertEqual(s.call("DELETE", "/v1/me/identities/\(UUID().lowercased)").status, 401)
    }

    // MARK: key sets and Apple

    func testAppleShapedTokensWithTheirNonceHash() {
        let nonce = "apple-" + UUID().uuidString
        let r = s.auth("apple", ["idToken": .string(IdentityFixture.appleToken(IdentityFixture.subject(), nonce: nonce)),
                                 "nonce": .string(nonce), "handle": "appleuser"])
        XCTAssertEqual(r.status, 201, body(r))
        // A test-provider token is not an Apple token (issuer, audience).
        let wrong = s.auth("apple", ["idToken": .string(IdentityFixture.token(IdentityFixture.subject())), "handle": "xyz"])
        XCTAssertEqual(wrong.json["reason"]?.stringValue, "issuer")
    }

    func testKeySetFromALoopbackURL() throws {
        let keys = try StandInHTTPServer()
        defer { keys.stop() }
        keys.answer("/jwks", body: IdentityFixture.keySet)
        let remote = try TestServer { $0.oidcProviders = [IdentityFixture.spec("\(keys.base)/jwks", name: "remote")] }
        defer { remote.stop() }
        let r = remote.auth("remote", ["idToken": .string(IdentityFixture.token(IdentityFixture.subject())), "handle": "remoteuser"])
        XCTAssertEqual(r.status, 201, body(r))
        XCTAssertEqual(keys.requests("/jwks").count, 1, "loaded once, at start")
    }

    // MARK: nonces across processes

    /// Two servers over one database (PostgreSQL): a nonce accepted by one is refused by the other.
    func testANonceAcceptedByOneServerIsRefusedByAnother() throws {
        guard TestServer.postgresURL != nil else { throw XCTSkip("two server processes share a database over PostgreSQL only") }
        let url = try XCTUnwrap(s.app.configuration.databaseURL)
        let other = try server { $0.databaseURL = url }
        defer { other.stop() }
        let nonce = "shared-" + UUID().uuidString
        let token = IdentityFixture.token(IdentityFixture.subject(), ["nonce": .string(nonce)])
        let first = s.auth(["idToken": .string(token), "nonce": .string(nonce), "handle": "twoproc"])
        XCTAssertEqual(first.status, 201, body(first))
        let replay = other.auth(["idToken": .string(token), "nonce": .string(nonce)])
        XCTAssertEqual(replay.status, 401, body(replay))
        XCTAssertEqual(replay.json["reason"]?.stringValue, "nonce")
        // Concurrent requests with one fresh nonce through both: exactly one is accepted.
        let raceNonce = "race-" + UUID().uuidString
        let raceToken = IdentityFixture.token(IdentityFixture.subject(), ["nonce": .string(raceNonce)])
        let statuses = Locked<[Int]>([])
        let servers: [TestServer] = [s, other]
        DispatchQueue.concurrentPerform(iterations: 6) { i in
            let r = servers[i % 2].auth(["idToken": .string(raceToken), "nonce": .string(raceNonce), "handle": "racer"])
            statuses.withLock { $0.append(r.status) }
        }
        XCTAssertEqual(statuses.withLock { $0 }.filter { $0 == 201 }.count, 1, "\(statuses.withLock { $0 })")
        XCTAssertEqual(statuses.withLock { $0 }.filter { $0 == 401 }.count, 5)
    }

    /// Expired nonces are forgotten as new ones are remembered.
    func testExpiredNoncesArePurged() throws {
        let past = Timestamp.nowMs() - 60_000
        for i in 0..<5 {
            try s.execute("INSERT INTO identity_nonces (nonce_hash, expires_at) VALUES (?, ?)", [.text("old\(i)"), .integer(past)],
                          postgres: "INSERT INTO identity_nonces (nonce_hash, expires_at) VALUES ($1, to_timestamp($2::bigint / 1000.0))")
        }
        XCTAssertEqual(try s.int("SELECT count(*) FROM identity_nonces"), 5)
        let nonce = "fresh-" + UUID().uuidString
        let r = s.auth(["idToken": .string(IdentityFixture.token(IdentityFixture.subject(), ["nonce": .string(nonce)])),
                        "nonce": .string(nonce), "handle": "purger"])
        XCTAssertEqual(r.status, 201, body(r))
        XCTAssertEqual(try s.int("SELECT count(*) FROM identity_nonces"), 1, "the expired ones went, the new one stays")
    }
}
