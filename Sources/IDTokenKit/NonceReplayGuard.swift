import Foundation

/// Remembers the nonces of accepted ID tokens so each is accepted once.
///
/// The verifier calls ``consume(nonceHash:until:)`` last, after everything else about the
/// token checked out. A conformer shared by several server processes (a database table with
/// the hash as primary key, an insert that reports a conflict) makes replays fail across them.
public protocol NonceReplayGuard: Sendable {
    /// Records `nonceHash` (the SHA-256 of the request's nonce, 64 lowercase hex digits)
    /// until `until` (the token's expiry plus the leeway; afterwards the token is refused as
    /// expired anyway). Returns true when the hash was not recorded yet, false when it was
    /// (a replay). Throws when it cannot tell (storage failure); the verifier passes that on.
    func consume(nonceHash: String, until: Date) throws -> Bool
}
