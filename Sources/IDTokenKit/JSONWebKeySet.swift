import LedgerModel

/// A provider's verification keys, by `kid`, read from a JWKS document (RFC 7517 section 5).
///
/// Only RS256 (RSA, 2048 to 8192 bits) and ES256 (P-256) signing keys are kept; every other
/// member of `keys` is left out and listed in ``skipped`` (a key of another type, curve, use
/// or algorithm, without `kid`, with private material, or too weak). A `kid` that appears
/// twice keeps its first usable key.
public struct JSONWebKeySet: Sendable {
    /// The largest document read, in bytes (256 KiB); published sets are a few KiB.
    public static let maximumSize = 256 * 1024
    /// The most `keys` members read (100).
    public static let maximumKeys = 100

    /// The usable keys, by `kid`.
    public let keys: [String: JSONWebKey]
    /// The members of `keys` left out, in document order.
    public let skipped: [JSONWebKey.Skip]

    /// An empty set.
    public init() {
        keys = [:]
        skipped = []
    }

    /// Parses a JWKS document; throws ``KeySetError`` when it is not a JSON object with a
    /// `keys` array (a set whose every key is skipped is valid, and empty).
    public init(json: [UInt8]) throws(KeySetError) {
        guard json.count <= Self.maximumSize else { throw KeySetError("the key set is larger than \(Self.maximumSize) bytes") }
        let document: JSONValue
        do { document = try JSONValue.parse(json) } catch { throw KeySetError("the key set is not JSON: \(error)") }
        guard let members = document["keys"]?.arrayValue else { throw KeySetError("the key set has no keys array") }
        guard members.count <= Self.maximumKeys else { throw KeySetError("the key set has more than \(Self.maximumKeys) keys") }
        var keys: [String: JSONWebKey] = [:]
        var skipped: [JSONWebKey.Skip] = []
        for member in members {
            do {
                let key = try JSONWebKey(member)
                if keys[key.keyID] == nil {
                    keys[key.keyID] = key
                } else {
                    skipped.append(JSONWebKey.Skip(keyID: key.keyID, reason: "a key with this kid comes earlier"))
                }
            } catch {
                skipped.append(error)
            }
        }
        self.keys = keys
        self.skipped = skipped
    }

    /// The key named `keyID`, if the set holds it.
    public subscript(keyID: String) -> JSONWebKey? { keys[keyID] }
}

/// Why a key set could not be read or fetched (not a token verdict: the verifier answers
/// `unknown_key` while it has no keys).
public struct KeySetError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
