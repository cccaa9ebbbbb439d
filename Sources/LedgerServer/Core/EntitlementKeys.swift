import Foundation
import LedgerCore
import LedgerModel
import StoreKitJWS

/// The server's P-256 keys for entitlement tokens, kept with the data in
/// `<data-dir>/entitlement-keys/`: `signing-key.pem` signs (created on first start),
/// every other `*.pem` there is a retired key still published in the JWKS so tokens it
/// signed verify until they expire. Rotation: move `signing-key.pem` to another name in
/// the folder and restart; delete it once the longest token TTL has passed.
final class EntitlementKeys: Sendable {
    struct PublicKey: Sendable {
        let kid: String
        let jwk: JSONValue
    }

    static let directoryName = "entitlement-keys"
    static let signingKeyName = "signing-key.pem"

    let signer: ES256Signer
    let signingKid: String
    /// The signing key first, then the retired keys by file name.
    let published: [PublicKey]

    init(dataDirectory: String) throws {
        let fm = FileManager.default
        let dir = dataDirectory + "/" + Self.directoryName
        try fm.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let signingPath = dir + "/" + Self.signingKeyName
        if !fm.fileExists(atPath: signingPath) {
            // Written whole under another name, then linked: a crash never leaves half a key,
            // and of processes starting together the first one's key is everybody's.
            let pem = try ES256Signer.generatePrivateKeyPEM()
            do {
                _ = try KeyFile.createUnlessPresent(signingPath, contents: Data(pem.utf8))
            } catch {
                throw OpenSSLError("\(signingPath): cannot write the entitlement signing key (\(error))")
            }
        }
        signer = try ES256Signer(privateKeyPath: signingPath)
        let current = try Self.publicKey(signer)
        signingKid = current.kid
        var keys = [current]
        for name in try fm.contentsOfDirectory(atPath: dir).sorted() where name.hasSuffix(".pem") && name != Self.signingKeyName {
            let key = try Self.publicKey(ES256Signer(privateKeyPath: dir + "/" + name))
            if !keys.contains(where: { $0.kid == key.kid }) { keys.append(key) }
        }
        published = keys
    }

    /// The JWK of `signer`'s public key, with its RFC 7638 thumbprint as `kid`.
    static func publicKey(_ signer: ES256Signer) throws -> PublicKey {
        let (x, y) = try signer.publicKeyCoordinates()
        let xs = Base64Codec.encode(x, alphabet: .url), ys = Base64Codec.encode(y, alphabet: .url)
        // The thumbprint hashes the required members in lexicographic order, no whitespace.
        let kid = TokenSecret.base64url(TokenSecret.sha256(#"{"crv":"P-256","kty":"EC","x":"\#(xs)","y":"\#(ys)"}"#))
        let jwk: JSONValue = .object(["kty": "EC", "crv": "P-256", "x": .string(xs), "y": .string(ys),
                                      "kid": .string(kid), "use": "sig", "alg": "ES256"])
        return PublicKey(kid: kid, jwk: jwk)
    }

    /// `{"keys":[…]}`.
    var jwks: JSONValue { .object(["keys": .array(published.map(\.jwk))]) }

    /// A compact ES256 JWS of `claims` with `kid` in the header.
    func sign(_ claims: JSONValue) throws -> String {
        let header: JSONValue = .object(["alg": "ES256", "typ": "JWT", "kid": .string(signingKid)])
        return try signer.sign(headerJSON: header.serialized(), payloadJSON: claims.serialized())
    }
}
