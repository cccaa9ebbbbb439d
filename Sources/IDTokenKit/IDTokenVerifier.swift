import COpenSSL
import Foundation
import LedgerModel

/// Verifies one provider's ID tokens: signature with a key of its key set, then claims,
/// then the nonce.
///
/// The checks, in order (the first failing one is the answer): the token is a compact JWT
/// of at most 16 KiB whose header has no `crit` and no `kid` but a string (`malformed`);
/// `alg` is `RS256` or `ES256` (`unsupported_algorithm`);
/// `kid` names a key of the set, refreshed once if need be (`unknown_key`); that key is
/// pinned to `alg` (`unsupported_algorithm`); the signature verifies (`signature`); the
/// claims are a JSON object with `iss`, `sub`, `aud`, `exp` and `iat` (`malformed`); `iss`
/// is the issuer (`issuer`); `aud` holds a configured audience (`audience`); `exp` is not
/// past (`expired`); `nbf` and `iat` are not in the future (`not_yet_valid`), each within the
/// leeway; and, when a nonce is given, the `nonce` claim carries it and it is new (`nonce`).
public struct IDTokenVerifier: Sendable {
    /// The longest nonce accepted, in bytes (1 KiB).
    public static let maximumNonceLength = 1024

    public let provider: IDTokenProvider
    public let keys: KeySetCache
    public let replayGuard: any NonceReplayGuard

    public init(provider: IDTokenProvider, keys: KeySetCache, replayGuard: any NonceReplayGuard) {
        self.provider = provider
        self.keys = keys
        self.replayGuard = replayGuard
    }

    /// Verifies `idToken` at `now`.
    ///
    /// - Parameter nonce: the nonce the client sent with the token, if any. The token's
    ///   `nonce` claim must then be its SHA-256 in lowercase hex (Apple's flow) or the nonce
    ///   itself, and the nonce must not have been accepted before. Without it the claim is
    ///   not checked.
    /// - Throws: ``IDTokenError`` for a refused token; what the replay guard throws when it
    ///   cannot answer.
    public func verify(_ idToken: String, nonce: String? = nil, now: Date = Date()) throws -> VerifiedIDToken {
        let jwt = try CompactJWT(idToken)
        guard let keyID = jwt.header.keyID, let key = keys.key(for: keyID) else { throw IDTokenError.unknownKey }
        guard key.algorithm == jwt.header.algorithm else { throw IDTokenError.unsupportedAlgorithm }
        guard key.publicKey.verify(signature: jwt.signature, message: jwt.signingInput) else { throw IDTokenError.signature }

        let claims = try IDTokenClaims(payload: jwt.payload)
        guard claims.issuer == provider.issuer else { throw IDTokenError.issuer }
        guard let audience = provider.audiences.first(where: { claims.audiences?.contains($0) ?? false }) else {
            throw IDTokenError.audience
        }
        let seconds = now.timeIntervalSince1970
        let leeway = provider.leeway
        guard claims.expiresAt > seconds - leeway else { throw IDTokenError.expired }
        if let notBefore = claims.notBefore, notBefore > seconds + leeway { throw IDTokenError.notYetValid }
        guard claims.issuedAt <= seconds + leeway else { throw IDTokenError.notYetValid }

        if let nonce {
            guard !nonce.isEmpty, nonce.utf8.count <= Self.maximumNonceLength,
                  case let claim?? = claims.nonce else { throw IDTokenError.nonce }
            let hash = Self.sha256Hex(nonce)
            guard claim == hash || claim == nonce else { throw IDTokenError.nonce }
            let until = Date(timeIntervalSince1970: claims.expiresAt + leeway)
            guard try replayGuard.consume(nonceHash: hash, until: until) else { throw IDTokenError.nonce }
        }

        return VerifiedIDToken(
            provider: provider.name, issuer: provider.issuer, subject: claims.subject, audience: audience,
            email: claims.email, emailVerified: claims.emailVerified,
            expiresAt: Date(timeIntervalSince1970: claims.expiresAt), issuedAt: Date(timeIntervalSince1970: claims.issuedAt),
            nonce: claims.nonce ?? nil, keyID: keyID, claims: claims.object)
    }

    /// SHA-256 of the UTF-8 of `text`, 64 lowercase hex digits.
    static func sha256Hex(_ text: String) -> String {
        let input = Array(text.utf8)
        var digest = [UInt8](repeating: 0, count: 32)
        if kidledger_sha256(input, input.count, &digest) != 1 { digest = SHA256.digest(input) }
        let hex = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(64)
        for byte in digest {
            out.append(hex[Int(byte >> 4)])
            out.append(hex[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}
