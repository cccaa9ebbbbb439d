import Foundation
import IDTokenKit
import IDTokenKitTesting
import LedgerModel
import LedgerServerTesting

/// Keys, key sets and ID tokens for the identity tests: an operator's provider `test` and
/// Apple-shaped tokens, signed in process (`IDTokenKitTesting`), at the real clock (the
/// servers verify against it).
enum IdentityFixture {
    static let issuer = "https://issuer.example"
    static let audience = "com.example.app"
    static let appleClient = "com.example.kidledger"

    /// Keys are made once: RSA generation costs.
    static let rsa = try! TestSigningKey.rsa(keyID: "rsa-1")
    static let ec = try! TestSigningKey.p256(keyID: "ec-1")
    /// Same kinds and key ids, in no key set.
    static let otherRSA = try! TestSigningKey.rsa(keyID: "rsa-1")
    /// A 512-bit RSA key: published, never usable.
    static let weakRSA = try! TestSigningKey.rsa(bits: 512, keyID: "weak")

    static let keySet = TestSigningKey.keySet([rsa.jwk(), ec.jwk(), weakRSA.jwk()])

    /// `keySet` in a file of its own (a new one per call), for `jwks=FILE`.
    static func keySetFile() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("jwks-\(UUID().uuidString).json").path
        try Data(keySet).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// The `--oidc-provider` spec of the provider `name` reading `jwks`.
    static func spec(_ jwks: String, name: String = "test") -> String {
        "name=\(name),issuer=\(issuer),audience=\(audience);com.example.web,jwks=\(jwks)"
    }

    /// Valid claims now, for `subject`, with `changes` (`.null` removes a claim).
    static func claims(subject: String, issuer: String = IdentityFixture.issuer, audience: String = IdentityFixture.audience,
                       _ changes: JSONObject = [:]) -> JSONObject {
        let now = Int64(Date().timeIntervalSince1970)
        var object: JSONObject = ["iss": .string(issuer), "sub": .string(subject), "aud": .string(audience),
                                  "iat": .int(now - 10), "exp": .int(now + 600)]
        for (name, value) in changes.pairs { object[name] = value.isNull ? JSONValue?.none : value }
        return object
    }

    /// A valid token of the `test` provider for `subject`.
    static func token(_ subject: String, key: TestSigningKey = rsa, _ changes: JSONObject = [:]) -> String {
        key.sign(claims: claims(subject: subject, changes))
    }

    /// An Apple-shaped token: Apple's issuer, the app's client id, the nonce's SHA-256.
    static func appleToken(_ subject: String, nonce: String? = nil) -> String {
        var changes: JSONObject = ["email": "relay@privaterelay.appleid.com", "email_verified": "true"]
        if let nonce { changes["nonce"] = .string(sha256Hex(nonce)) }
        return rsa.sign(claims: claims(subject: subject, issuer: IDTokenProvider.appleIssuer, audience: appleClient, changes))
    }

    static func sha256Hex(_ text: String) -> String {
        ForgedTokens.sha256(Array(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// A fresh subject.
    static func subject() -> String { "sub-" + UUID().uuidString.lowercased() }
}

extension TestServer {
    /// `POST /v1/auth/{provider}` with `members`.
    @discardableResult
    func auth(_ provider: String, _ members: KeyValuePairs<String, JSONValue>) -> Reply {
        call("POST", "/v1/auth/\(provider)", json: .obj(members))
    }

    /// `POST /v1/auth/test` with `members`.
    @discardableResult
    func auth(_ members: KeyValuePairs<String, JSONValue>) -> Reply {
        call("POST", "/v1/auth/test", json: .obj(members))
    }
}
