import Foundation
import IDTokenKit
import IDTokenKitTesting
import LedgerModel
@testable import LedgerCore
@testable import LedgerServer
import LedgerServerTesting
@testable import LedgerStorageSQLite
import StoreKitJWS
import XCTest

/// Sign in with Apple's revocation (both backends), against a loopback stand-in for
/// Apple's `/auth/token` and `/auth/revoke`: the authorization code exchanged for a refresh
/// token, kept sealed, revoked on deletion or unlinking, and retried while Apple is down.
final class AppleRevocationTests: XCTestCase {
    static let teamId = "TEAM123456", keyId = "KEY7654321"
    static let refreshToken = "r.refresh-token-" + UUID().uuidString

    var apple: StandInHTTPServer!
    var s: TestServer!
    var keyPEM = ""
    var paths: [String] = []

    override func setUpWithError() throws {
        apple = try StandInHTTPServer()
        apple.answer("/auth/token", json: #"{"access_token":"a","token_type":"Bearer","expires_in":3600,"refresh_token":"\#(Self.refreshToken)","id_token":"x"}"#)
        apple.answer("/auth/revoke", body: [])
        keyPEM = try ES256Signer.generatePrivateKeyPEM()
        let p8 = FileManager.default.temporaryDirectory.appendingPathComponent("AuthKey_\(UUID().uuidString).p8").path
        try Data(keyPEM.utf8).write(to: URL(fileURLWithPath: p8))
        let jwks = try IdentityFixture.keySetFile()
        paths = [p8, jwks]
        s = try TestServer { c in
            c.appleClientIds = [IdentityFixture.appleClient]
            c.appleJWKS = jwks
            c.appleTeamId = Self.teamId
            c.appleKeyId = Self.keyId
            c.applePrivateKeyPath = p8
            c.appleAuthURL = self.apple.base
            c.appleRevocationRetrySeconds = 0.2
            c.appleRevocationPollSeconds = 0.1
        }
    }

    override func tearDown() {
        s?.stop()
        apple?.stop()
        for p in paths { try? FileManager.default.removeItem(atPath: p) }
    }

    /// Waits up to `seconds` for `condition`.
    func eventually(_ what: String, seconds: Double = 10, _ condition: () throws -> Bool) throws {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try condition() { return }
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTFail("not within \(seconds) s: \(what)")
    }

    func tokenRows() throws -> Int64 { try s.int("SELECT count(*) FROM apple_tokens") }

    /// Signs up through Apple with an authorization code; waits for the exchange.
    func signUp(_ handle: String) throws -> (accountId: String, token: String) {
        let r = s.auth("apple", ["idToken": .string(IdentityFixture.appleToken(IdentityFixture.subject())),
                                 "authorizationCode": .string("code-\(handle)"), "handle": .string(handle)])
        XCTAssertEqual(r.status, 201, String(decoding: r.body, as: UTF8.self))
        try eventually("the code is exchanged and the refresh token kept") { try tokenRows() == 1 }
        return (r.json["account"]!["id"]!.stringValue!, r.json["token"]!["secret"]!.stringValue!)
    }

    /// The claims of a client secret, after checking its header and ES256 signature.
    func clientSecretClaims(_ secret: String) throws -> JSONValue {
        let parts = secret.split(separator: ".").map(String.init)
        XCTAssertEqual(parts.count, 3)
        let header = try JSONValue.parse(XCTUnwrap(Base64Codec.decode(Array(parts[0].utf8), alphabet: .url)))
        XCTAssertEqual(header["alg"]?.stringValue, "ES256")
        XCTAssertEqual(header["kid"]?.stringValue, Self.keyId)
        let (x, y) = try ES256Signer(privateKeyPEM: keyPEM).publicKeyCoordinates()
        let payload = try XCTUnwrap(try ES256PublicKey(x: x, y: y).verifiedPayload(secret), "signed with the .p8 key")
        return try JSONValue.parse(payload)
    }

    func testTheCodeIsExchangedTheTokenKeptSealedAndDeletionRevokesIt() throws {
        let (accountId, _) = try signUp("applerevoke")
        let exchange = try XCTUnwrap(apple.requests("/auth/token").first)
        XCTAssertEqual(exchange.method, "POST")
        XCTAssertEqual(exchange.headers["content-type"], "application/x-www-form-urlencoded")
        let form = exchange.form
        XCTAssertEqual(form["client_id"], IdentityFixture.appleClient)
        XCTAssertEqual(form["grant_type"], "authorization_code")
        XCTAssertEqual(form["code"], "code-applerevoke")
        let claims = try clientSecretClaims(try XCTUnwrap(form["client_secret"]))
        XCTAssertEqual(claims["iss"]?.stringValue, Self.teamId)
        XCTAssertEqual(claims["sub"]?.stringValue, IdentityFixture.appleClient)
        XCTAssertEqual(claims["aud"]?.stringValue, "https://appleid.apple.com")
        let iat = try XCTUnwrap(claims["iat"]?.intValue), exp = try XCTUnwrap(claims["exp"]?.intValue)
        XCTAssertLessThanOrEqual(abs(iat - Int64(Date().timeIntervalSince1970)), 60)
        XCTAssertTrue(exp > iat && exp - iat <= 15_777_000, "expires within six months")

        // Sealed at rest: the stored bytes do not hold the token.
        let plain = Array(Self.refreshToken.utf8)
        XCTAssertEqual(try s.int("SELECT count(*) FROM apple_tokens WHERE instr(sealed, ?) > 0", [.blob(plain)],
                                 postgres: "SELECT count(*) FROM apple_tokens WHERE position($1::bytea in sealed) > 0"), 0)
        XCTAssertEqual(try s.int("SELECT length(sealed) FROM apple_tokens", postgres: "SELECT length(sealed)::bigint FROM apple_tokens"),
                       Int64(TokenSealer.nonceLength + plain.count + TokenSealer.tagLength))
        let row = try XCTUnwrap(try s.app.services.storage.read { try $0.identityReading().appleTokens(account: accountId) }.first)
        let sealer = try TokenSealer(directory: s.dataDirectory)
        XCTAssertEqual(row.keyId, sealer.keyId)
        XCTAssertEqual(sealer.open(row.sealed, associatedData: AppleTokens.associatedData(row)), plain)
        XCTAssertNil(sealer.open(row.sealed, associatedData: AppleTokens.associatedData(id: row.id, accountId: "someone-else")),
                     "bound to its row")

        // Account deletion's call: the revocation is sent, and the row forgotten.
        XCTAssertTrue(apple.requests("/auth/revoke").isEmpty)
        XCTAssertEqual(try XCTUnwrap(s.app.services.identity).revokeAppleTokens(accountId: accountId), 1)
        try eventually("the revocation is sent and the row forgotten") { try tokenRows() == 0 }
        let revoke = try XCTUnwrap(apple.requests("/auth/revoke").first)
        XCTAssertEqual(revoke.form["token"], Self.refreshToken)
        XCTAssertEqual(revoke.form["token_type_hint"], "refresh_token")
        XCTAssertEqual(revoke.form["client_id"], IdentityFixture.appleClient)
        XCTAssertEqual(try clientSecretClaims(try XCTUnwrap(revoke.form["client_secret"]))["sub"]?.stringValue, IdentityFixture.appleClient)
        XCTAssertEqual(apple.requests("/auth/revoke").count, 1, "sent once")
    }

    func testARevocationIsRetriedWhileAppleIsDown() throws {
        let (accountId, _) = try signUp("appledown")
        apple.answer("/auth/revoke", status: 503, json: #"{"error":"temporarily_unavailable"}"#)
        // Queued inside a write of its own, as account deletion will do in its own.
        let queued = try s.app.services.storage.writeHere { w in try w.revokeAppleTokens(accountId: accountId) }
        XCTAssertEqual(queued, 1)
        s.app.services.identity?.revocationsQueued()
        try eventually("two attempts failed") {
            try s.int("SELECT attempts FROM apple_tokens", postgres: "SELECT attempts::bigint FROM apple_tokens") >= 2
        }
        XCTAssertEqual(try tokenRows(), 1, "kept while Apple does not answer")
        apple.answer("/auth/revoke", body: [])
        try eventually("the retry succeeds") { try tokenRows() == 0 }
        XCTAssertGreaterThanOrEqual(apple.requests("/auth/revoke").count, 3)
        XCTAssertTrue(apple.requests("/auth/revoke").allSatisfy { $0.form["token"] == Self.refreshToken })
    }

    func testUnlinkingTheAppleIdentityRevokesItsToken() throws {
        let (_, token) = try signUp("appleunlink")
        let id = try XCTUnwrap(s.call("GET", "/v1/me/identities", token: token).json["items"]?.arrayValue?.first?["id"]?.stringValue)
        XCTAssertEqual(s.call("DELETE", "/v1/me/identities/\(id)", token: token).status, 204)
        try eventually("revoked after unlinking") { try tokenRows() == 0 }
        XCTAssertEqual(apple.requests("/auth/revoke").count, 1)
    }

    /// `unlinkAllIdentities` (for account deletion): every identity goes, its tokens are queued.
    func testUnlinkAllIdentitiesForAccountDeletion() throws {
        let (accountId, token) = try signUp("appleall")
        XCTAssertEqual(s.call("POST", "/v1/me/identities", token: token,
                              json: .obj(["provider": "apple", "idToken": .string(IdentityFixture.appleToken(IdentityFixture.subject()))])).status, 201)
        let unlinked = try s.app.services.storage.writeHere { w in try w.unlinkAllIdentities(accountId: accountId) }
        XCTAssertEqual(unlinked, 2)
        s.app.services.identity?.revocationsQueued()
        XCTAssertEqual(s.call("GET", "/v1/me/identities", token: token).json["items"], .array([]))
        try eventually("revoked") { try tokenRows() == 0 }
    }

    /// `DELETE /v1/me` itself: the account's identities are unlinked (signing in with one
    /// again finds no account) and its Apple token is revoked once the deletion is durable.
    func testDeletingTheAccountUnlinksItsIdentitiesAndRevokesItsAppleToken() throws {
        let subject = IdentityFixture.subject()
        let r = s.auth("apple", ["idToken": .string(IdentityFixture.appleToken(subject)),
                                 "authorizationCode": .string("code-appledelete"), "handle": "appledelete"])
        XCTAssertEqual(r.status, 201, String(decoding: r.body, as: UTF8.self))
        let token = try XCTUnwrap(r.json["token"]?["secret"]?.stringValue)
        try eventually("the code is exchanged and the refresh token kept") { try tokenRows() == 1 }
        XCTAssertEqual(s.call("DELETE", "/v1/me", token: token, json: .obj(["confirmHandle": "appledelete"])).status, 204)
        try eventually("the revocation is sent and the row forgotten") { try tokenRows() == 0 }
        XCTAssertEqual(apple.requests("/auth/revoke").first?.form["token"], Self.refreshToken)
        let again = s.auth("apple", ["idToken": .string(IdentityFixture.appleToken(subject))])
        XCTAssertEqual(again.status, 404)
        XCTAssertEqual(again.code, "identity_not_linked")
        XCTAssertEqual(s.call("GET", "/v1/me", token: token).status, 401)
    }

    func testAFailedExchangeLeavesTheSignInAsItIs() throws {
        apple.answer("/auth/token", status: 400, json: #"{"error":"invalid_grant"}"#)
        let r = s.auth("apple", ["idToken": .string(IdentityFixture.appleToken(IdentityFixture.subject())),
                                 "authorizationCode": "expired-code", "handle": "applefail"])
        XCTAssertEqual(r.status, 201)
        try eventually("the exchange was tried") { !apple.requests("/auth/token").isEmpty }
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(try tokenRows(), 0)
    }
}

/// The sealing of kept secrets and the Apple client's pieces, without a server.
final class AppleRevocationUnitTests: XCTestCase {
    func testSealedValuesOpenOnlyWithTheirKeyAndAssociatedData() throws {
        let sealer = TokenSealer(key: Cursor.randomKey()), other = TokenSealer(key: Cursor.randomKey())
        let plain = Array("refresh-token".utf8), aad = Array("row".utf8)
        let a = try sealer.seal(plain, associatedData: aad), b = try sealer.seal(plain, associatedData: aad)
        XCTAssertNotEqual(a, b, "a fresh nonce each time")
        XCTAssertEqual(sealer.open(a, associatedData: aad), plain)
        XCTAssertNil(sealer.open(a, associatedData: Array("other row".utf8)))
        XCTAssertNil(other.open(a, associatedData: aad))
        for i in [0, 12, a.count - 1] {
            var altered = a
            altered[i] ^= 1
            XCTAssertNil(sealer.open(altered, associatedData: aad), "byte \(i) altered")
        }
        XCTAssertNil(sealer.open(Array(a.prefix(20)), associatedData: aad))
        XCTAssertEqual(sealer.open(try sealer.seal([], associatedData: aad), associatedData: aad), [])
        XCTAssertNotEqual(sealer.keyId, other.keyId)
    }

    func testTheKeyFileIsMadeOnceAndAForeignOneIsRefused() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("sealer-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = try TokenSealer(directory: dir), again = try TokenSealer(directory: dir)
        XCTAssertEqual(first.keyId, again.keyId)
        let attributes = try FileManager.default.attributesOfItem(atPath: dir + "/" + TokenSealer.fileName)
        XCTAssertEqual((attributes[.posixPermissions] as? NSNumber)?.intValue, 0o600)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: dir + "/" + TokenSealer.fileName))
        XCTAssertThrowsError(try TokenSealer(directory: dir))
    }

    func testFormEncoding() {
        XCTAssertEqual(AppleAuthClient.form(["b": "x y", "a": "1+2=3&4", "c": "é~"]), "a=1%2B2%3D3%264&b=x+y&c=%C3%A9%7E")
    }

    func testUnreachableAppleIsAnOutcomeNotAnError() throws {
        let standIn = try StandInHTTPServer()
        let base = URL(string: standIn.base)!
        standIn.stop()
        let pem = try ES256Signer.generatePrivateKeyPEM()
        let p8 = FileManager.default.temporaryDirectory.appendingPathComponent("k-\(UUID().uuidString).p8").path
        try Data(pem.utf8).write(to: URL(fileURLWithPath: p8))
        defer { try? FileManager.default.removeItem(atPath: p8) }
        let client = try AppleAuthClient(baseURL: base, teamId: "T", keyId: "K", privateKeyPath: p8, timeout: 2)
        guard case .unreachable = client.revoke(refreshToken: "r", clientId: "c") else { return XCTFail("expected unreachable") }
    }

    func testIdentityFlagsAreCheckedBeforeStart() throws {
        var c = LedgerAppConfiguration()
        XCTAssertNil(c.identityProblem)
        c.appleTeamId = "T"
        XCTAssertEqual(c.identityProblem, "--apple-team-id, --apple-key-id and --apple-private-key go together")
        c.appleKeyId = "K"
        c.applePrivateKeyPath = "/nonexistent.p8"
        XCTAssertTrue(c.identityProblem?.contains("cannot read") ?? false)
        let notAKey = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).p8").path
        try Data("not a key".utf8).write(to: URL(fileURLWithPath: notAKey))
        defer { try? FileManager.default.removeItem(atPath: notAKey) }
        c.applePrivateKeyPath = notAKey
        XCTAssertTrue(c.identityProblem?.contains(".p8") ?? false, c.identityProblem ?? "")
        c = LedgerAppConfiguration()
        c.appleTeamId = "T"; c.appleKeyId = "K"; c.applePrivateKeyPath = notAKey
        c.appleAuthURL = "http://apple.example"
        XCTAssertTrue(c.identityProblem?.contains("--apple-auth-url") ?? false)
        c = LedgerAppConfiguration()
        c.oidcProviders = ["name=a,issuer=https://a.example,audience=x,jwks=/k", "name=a,issuer=https://b.example,audience=y,jwks=/k"]
        XCTAssertEqual(c.identityProblem, "--oidc-provider: the name a is given twice")
        c.oidcProviders = ["name=apple,issuer=https://a.example,audience=x,jwks=/k"]
        XCTAssertTrue(c.identityProblem?.contains("built-in") ?? false)
        c = LedgerAppConfiguration()
        c.appleClientIds = ["com.example.app"]
        c.appleJWKS = "ftp://keys.example"
        XCTAssertTrue(c.identityProblem?.hasPrefix("--apple-jwks") ?? false)
    }
}
