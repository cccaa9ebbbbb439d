import Foundation
import LedgerModel

/// Whether the household has Pro, as the server signed it.
public struct ProStatus: Sendable, Equatable {
    /// True while the signed entitlement says Pro and has not expired.
    public var isPro: Bool
    /// The subscription's state when the token was signed (`active`, `inGracePeriod`, …); nil without one.
    public var state: String?
    /// The purchased product, if any.
    public var productId: String?
    /// Until when this answer holds without asking the server again (the token's `exp`).
    public var validUntil: Date
    /// True when the server could not be reached and the answer comes from the token kept on this device.
    public var fromCache: Bool
}

extension Ledger {
    /// Whether this shared household has Pro. Online, fetches a fresh entitlement token and
    /// the server's published keys, verifies the token's ES256 signature on this device
    /// (portable code, no crypto library needed) and keeps both. Offline, answers from the
    /// kept token until its `exp` — after that, or without a kept token, `isPro` is false.
    /// A token whose signature, key or household does not match is never believed.
    public func proStatus(now: Date = Date()) async throws -> ProStatus {
        let household = try publicErrors { try store.household() }
        guard household.shared else {
            throw LedgerError.notAllowed(reason: "Pro belongs to a shared household; share this ledger first.")
        }
        let id = household.id.lowercased()
        do {
            let (token, keys) = try await onServer { engine in
                try engine.callServer { (api: APIClient) throws(APIError) -> ([UInt8], [UInt8]) in
                    (try api.call("GET", "/v1/households/\(id)/entitlement/token").body, try api.call("GET", "/v1/entitlement-keys").body)
                }
            }
            guard let compact = (try? JSONValue.parse(token))?["token"]?.stringValue,
                  let keySet = try? JSONValue.parse(keys),
                  let status = EntitlementToken.verify(compact, keys: keySet, household: id, now: now, fromCache: false) else {
                throw LedgerError.server(code: "invalid_entitlement_token", status: 200,
                                         detail: "The server's entitlement token does not verify with its published keys.")
            }
            try publicErrors {
                try store.set(.entitlementToken, compact)
                try store.set(.entitlementKeys, String(decoding: keys, as: UTF8.self))
            }
            return status
        } catch LedgerError.offline {
            guard let compact = meta(.entitlementToken), let keys = meta(.entitlementKeys),
                  let keySet = try? JSONValue.parse(Array(keys.utf8)),
                  let status = EntitlementToken.verify(compact, keys: keySet, household: id, now: now, fromCache: true) else {
                return ProStatus(isPro: false, state: nil, productId: nil, validUntil: now, fromCache: true)
            }
            return status
        }
    }
}

/// Checks an entitlement token (compact ES256 JWS) against a JWKS.
enum EntitlementToken {
    /// The token's status when its header names `ES256` and a `kid` of `keys`, the signature
    /// verifies with that P-256 key, and `sub` is `household`; otherwise nil. Past `exp`
    /// (or with `pro` not true) `isPro` is false.
    static func verify(_ compact: String, keys: JSONValue, household: String, now: Date, fromCache: Bool) -> ProStatus? {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let headerBytes = base64url(parts[0]), let payloadBytes = base64url(parts[1]),
              let signature = base64url(parts[2]),
              let header = try? JSONValue.parse(headerBytes), header["alg"]?.stringValue == "ES256",
              let kid = header["kid"]?.stringValue,
              case .array(let list)? = keys["keys"],
              let jwk = list.first(where: { $0["kid"]?.stringValue == kid }),
              jwk["kty"]?.stringValue == "EC", jwk["crv"]?.stringValue == "P-256",
              let x = jwk["x"]?.stringValue.flatMap(base64url), let y = jwk["y"]?.stringValue.flatMap(base64url),
              let key = P256PublicKey(x: x, y: y),
              key.isValidSignature(signature, digest: SHA256.digest(Array((parts[0] + "." + parts[1]).utf8))),
              let claims = try? JSONValue.parse(payloadBytes),
              claims["sub"]?.stringValue?.lowercased() == household,
              let exp = claims["exp"]?.intValue else { return nil }
        let validUntil = Date(timeIntervalSince1970: Double(exp))
        return ProStatus(isPro: claims["pro"] == .bool(true) && validUntil > now, state: claims["state"]?.stringValue,
                         productId: claims["productId"]?.stringValue, validUntil: validUntil, fromCache: fromCache)
    }

    /// Unpadded base64url (RFC 7515) to bytes; nil for anything else.
    static func base64url(_ text: String) -> [UInt8]? {
        guard text.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else { return nil }
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        standard += String(repeating: "=", count: (4 - standard.count % 4) % 4)
        return Data(base64Encoded: standard).map(Array.init)
    }
}
