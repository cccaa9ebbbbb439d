import LedgerModel
import StoreKitJWS

/// One verification key of a provider's key set (RFC 7517), pinned to one algorithm.
public struct JSONWebKey: Sendable {
    /// The key's `kid`: tokens name their key by it.
    public let keyID: String
    /// The only algorithm this key verifies: its `alg` when the JWK states one, else RS256 for
    /// `kty` `RSA` and ES256 for `kty` `EC` on `crv` `P-256`.
    public let algorithm: JWSAlgorithm
    /// The RSA modulus or the curve, in bits.
    public var bits: Int { publicKey.bits }
    let publicKey: PublicKey

    /// Reads one member of a `keys` array. Throws ``Skip`` for a key this verifier does not
    /// use (another type, curve, use or algorithm, no `kid`, private material) or cannot use
    /// (bad numbers, an RSA modulus under 2048 bits).
    init(_ value: JSONValue) throws(Skip) {
        guard let member = value.objectValue else { throw Skip(keyID: nil, reason: "not a JSON object") }
        let keyID = member["kid"]?.stringValue
        func skip(_ reason: String) -> Skip { Skip(keyID: keyID, reason: reason) }

        guard let type = member["kty"]?.stringValue else { throw skip("no kty") }
        if let use = member["use"], use != .string("sig") { throw skip("use is not sig") }
        if let operations = member["key_ops"] {
            guard let list = operations.arrayValue, list.contains(.string("verify")) else { throw skip("key_ops lacks verify") }
        }
        for privateMember in ["d", "p", "q", "dp", "dq", "qi", "oth", "k"] where member[privateMember] != nil {
            throw skip("holds private key material (\(privateMember))")
        }
        let stated: JWSAlgorithm?
        switch member["alg"] {
        case nil: stated = nil
        case .string(let name)?:
            guard let algorithm = JWSAlgorithm(rawValue: name) else { throw skip("algorithm \(name) is not RS256 or ES256") }
            stated = algorithm
        default: throw skip("alg is not a string")
        }
        guard let keyID, !keyID.isEmpty else { throw skip("no kid") }

        func bytes(_ name: String) throws(Skip) -> [UInt8] {
            guard let text = member[name]?.stringValue else { throw skip("no \(name)") }
            guard let decoded = Base64Codec.decode(Array(text.utf8), alphabet: .url), !decoded.isEmpty else {
                throw skip("\(name) is not canonical base64url")
            }
            return decoded
        }
        let key: PublicKey
        switch type {
        case "RSA":
            guard (stated ?? .rs256) == .rs256 else { throw skip("alg ES256 does not fit an RSA key") }
            let (n, e) = (try bytes("n"), try bytes("e"))
            do { key = try PublicKey.rsa(modulus: n, exponent: e) } catch { throw skip(error.message) }
        case "EC":
            guard member["crv"] == .string("P-256") else { throw skip("curve is not P-256") }
            guard (stated ?? .es256) == .es256 else { throw skip("alg RS256 does not fit a P-256 key") }
            let (x, y) = (try bytes("x"), try bytes("y"))
            do { key = try PublicKey.p256(x: x, y: y) } catch { throw skip(error.message) }
        default:
            throw skip("key type \(type)")
        }
        self.keyID = keyID
        self.algorithm = key.algorithm
        self.publicKey = key
    }

    /// A key of a set that is left out, and why; for the operator's log.
    public struct Skip: Error, Equatable, Sendable, CustomStringConvertible {
        /// The key's `kid`, when it has one.
        public var keyID: String?
        public var reason: String
        public init(keyID: String?, reason: String) {
            self.keyID = keyID
            self.reason = reason
        }
        public var description: String { "key \(keyID.map { "\"\($0)\"" } ?? "without kid"): \(reason)" }
    }
}
