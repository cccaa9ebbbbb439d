import LedgerModel

/// A link code as stored: never the code, only its SHA-256 (the row's key) and its bucket.
struct LinkCodeRecord: Sendable, Equatable {
    /// The account a redemption signs in.
    var accountId: String
    /// The code's first `bucketLength` characters. A refused redemption counts against
    /// every live code of its bucket, and a code that has seen `maxFailures` of them is
    /// void: however many addresses try, no code can be guessed at more than that many
    /// times. The remaining characters (50 bits) are the secret.
    var bucket: String
    var createdAt: Int64
    var expiresAt: Int64

    /// 12 characters (60 bits), as API.md says.
    static let length = 12
    /// Two characters: 1,024 buckets.
    static let bucketLength = 2
    /// Ten minutes, in milliseconds.
    static let lifetimeMs: Int64 = 10 * 60 * 1000
    /// Live codes one account may hold; a new one replaces the oldest past this.
    static let perAccount = 5
}

/// A link code as issued: shown once.
struct IssuedLinkCode: Sendable, Equatable {
    var code: HumanCode
    var record: LinkCodeRecord
}

/// An account's recovery codes: how many are unused, and when the set was made (nil: none).
struct RecoveryCodeSummary: Sendable, Equatable {
    var remaining: Int
    var createdAt: Int64?
}

/// A recovery code set as issued: the codes are shown once.
struct IssuedRecoveryCodes: Sendable, Equatable {
    var codes: [HumanCode]
    var createdAt: Int64

    /// 16 characters (80 bits) each.
    static let length = 16
    static let count = 10
}

/// What one lookup of a recovery attempt found: the account of the handle (nil: none),
/// and the stored hash of the account's code matching the attempt (nil: none), with
/// whether that code was used.
struct RecoveryCandidate: Sendable, Equatable {
    var accountId: String?
    var storedHash: [UInt8]?
    var used: Bool
}

/// A household an account owns, and whether anyone else is a member (an accepted participant).
struct OwnedHousehold: Sendable, Equatable {
    var id: String
    var hasOtherMembers: Bool
}

/// A fixed-window limit on attempts: at most `limit` in `windowMs` (from the first), per key.
struct AttemptLimit: Sendable, Equatable {
    /// What the counted keys are (`link-address`, `recovery-handle`, …).
    var scope: String
    var limit: Int
    var windowMs: Int64

    /// Whether it limits anything (a limit of 0 is none).
    var isOn: Bool { limit > 0 }

    /// For a window that began at `windowStart` and has counted `count` attempts: nil while
    /// that is within the limit, else the milliseconds left of the window (at least 1).
    func retryAfter(windowStart: Int64, count: Int64, now: Int64) -> Int64? {
        count <= Int64(limit) ? nil : max(1, windowStart + windowMs - now)
    }
}

/// The limits a redemption or a recovery is held to.
struct CodeAttemptLimits: Sendable, Equatable {
    /// Per client address (`ClientKey`): failed redemptions of link codes, or failed recoveries.
    var perAddress: AttemptLimit
    /// Recovery: failed attempts per handle (link codes are limited per code instead).
    var perHandle: AttemptLimit?
    /// Link codes: failed redemptions a live code's bucket may see before the code is void.
    var perCode: Int = 0
}

/// What a link code redemption came to.
enum LinkCodeRedemption: Sendable, Equatable {
    case redeemed(AccountRecord, IssuedToken)
    /// Used, expired, void or unknown: one answer for all.
    case refused
    /// The client address is past its limit; retry after that many milliseconds.
    case limited(retryAfterMs: Int64)
}

/// What a recovery attempt came to.
enum RecoveryOutcome: Sendable, Equatable {
    /// `revoked`: the account's other tokens revoked with it (`revokeOtherTokens`).
    case recovered(AccountRecord, IssuedToken, revoked: [String])
    /// One answer for every failure; `reason` is for the server's log only.
    case failed(reason: RecoveryFailure)
    /// The address or the handle is past its limit; retry after that many milliseconds.
    case limited(retryAfterMs: Int64, scope: String)
}

/// Why a recovery failed (logged; never answered).
enum RecoveryFailure: String, Sendable, Equatable {
    case malformedCode, unknownHandle, wrongCode, usedCode
}

/// What deleting an account did.
struct AccountDeletion: Sendable, Equatable {
    /// The account's tokens revoked (their long-polls end).
    var revokedTokens: [String]
    /// The households deleted (owned alone, or shared and `delete` was asked).
    var deletedHouseholds: [String]
    /// The shared households the account left.
    var leftHouseholds: [String]
}

/// What `DELETE /v1/me` does with households the account owns that have other members.
enum OwnedSharedHouseholds: String, Sendable {
    /// Refuse the deletion, listing them (the default).
    case refuse
    /// Delete them with the account: their members' devices see them deleted.
    case delete
}

extension AccountRecord {
    /// The display name a deleted account shows where it still appears (a participant row
    /// of a household it left).
    static let deletedDisplayName = "Deleted account"

    /// The handle a deleted account's row holds instead of its own, which is retired: never
    /// a valid handle (`~` is not a handle character), so no lookup by handle finds it.
    static func deletedHandle(id: String) -> String { "~" + id }

    /// Whether `handle` is a deleted account's placeholder.
    static func isDeletedHandle(_ handle: String) -> Bool { handle.utf8.first == UInt8(ascii: "~") }

    /// How long a deleted account's handle is refused to new accounts: 30 days, in milliseconds.
    static let retiredHandleMs: Int64 = 30 * 24 * 3600 * 1000
}
