import LedgerModel

/// A link code as stored: never the code, only its SHA-256 (the row's key) and its bucket.
package struct LinkCodeRecord: Sendable, Equatable {
    /// The account a redemption signs in.
    package var accountId: String
    /// The code's first `bucketLength` characters. A refused redemption counts against
    /// every live code of its bucket, and a code that has seen `maxFailures` of them is
    /// void: however many addresses try, no code can be guessed at more than that many
    /// times. The remaining characters (50 bits) are the secret.
    package var bucket: String
    package var createdAt: Int64
    package var expiresAt: Int64

    /// 12 characters (60 bits), as API.md says.
    package static let length = 12
    /// Two characters: 1,024 buckets.
    package static let bucketLength = 2
    /// Ten minutes, in milliseconds.
    package static let lifetimeMs: Int64 = 10 * 60 * 1000
    /// Live codes one account may hold; a new one replaces the oldest past this.
    package static let perAccount = 5

    package init(accountId: String, bucket: String, createdAt: Int64, expiresAt: Int64) {
        self.accountId = accountId
        self.bucket = bucket
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// A link code as issued: shown once.
package struct IssuedLinkCode: Sendable, Equatable {
    package var code: HumanCode
    package var record: LinkCodeRecord

    package init(code: HumanCode, record: LinkCodeRecord) {
        self.code = code
        self.record = record
    }
}

/// An account's recovery codes: how many are unused, and when the set was made (nil: none).
package struct RecoveryCodeSummary: Sendable, Equatable {
    package var remaining: Int
    package var createdAt: Int64?

    package init(remaining: Int, createdAt: Int64? = nil) {
        self.remaining = remaining
        self.createdAt = createdAt
    }
}

/// A recovery code set as issued: the codes are shown once.
package struct IssuedRecoveryCodes: Sendable, Equatable {
    package var codes: [HumanCode]
    package var createdAt: Int64

    /// 16 characters (80 bits) each.
    package static let length = 16
    package static let count = 10

    package init(codes: [HumanCode], createdAt: Int64) {
        self.codes = codes
        self.createdAt = createdAt
    }
}

/// What one lookup of a recovery attempt found: the account of the handle (nil: none),
/// and the stored hash of the account's code matching the attempt (nil: none), with
/// whether that code was used.
package struct RecoveryCandidate: Sendable, Equatable {
    package var accountId: String?
    package var storedHash: [UInt8]?
    package var used: Bool

    package init(accountId: String? = nil, storedHash: [UInt8]? = nil, used: Bool) {
        self.accountId = accountId
        self.storedHash = storedHash
        self.used = used
    }
}

/// A household an account owns, and whether anyone else is a member (an accepted participant).
package struct OwnedHousehold: Sendable, Equatable {
    package var id: String
    package var hasOtherMembers: Bool

    package init(id: String, hasOtherMembers: Bool) {
        self.id = id
        self.hasOtherMembers = hasOtherMembers
    }
}

/// A fixed-window limit on attempts: at most `limit` in `windowMs` (from the first), per key.
package struct AttemptLimit: Sendable, Equatable {
    /// What the counted keys are (`link-address`, `recovery-handle`, …).
    package var scope: String
    package var limit: Int
    package var windowMs: Int64

    /// Whether it limits anything (a limit of 0 is none).
    package var isOn: Bool { limit > 0 }

    /// For a window that began at `windowStart` and has counted `count` attempts: nil while
    /// that is within the limit, else the milliseconds left of the window (at least 1).
    package func retryAfter(windowStart: Int64, count: Int64, now: Int64) -> Int64? {
        count <= Int64(limit) ? nil : max(1, windowStart + windowMs - now)
    }

    package init(scope: String, limit: Int, windowMs: Int64) {
        self.scope = scope
        self.limit = limit
        self.windowMs = windowMs
    }
}

/// The limits a redemption or a recovery is held to.
package struct CodeAttemptLimits: Sendable, Equatable {
    /// Per client address (`ClientKey`): failed redemptions of link codes, or failed recoveries.
    package var perAddress: AttemptLimit
    /// Recovery: failed attempts per handle (link codes are limited per code instead).
    package var perHandle: AttemptLimit?
    /// Link codes: failed redemptions a live code's bucket may see before the code is void.
    package var perCode: Int = 0

    package init(perAddress: AttemptLimit, perHandle: AttemptLimit? = nil, perCode: Int = 0) {
        self.perAddress = perAddress
        self.perHandle = perHandle
        self.perCode = perCode
    }
}

/// What a link code redemption came to.
package enum LinkCodeRedemption: Sendable, Equatable {
    case redeemed(AccountRecord, IssuedToken)
    /// A code issued for a child's device: the child token it paired.
    case pairedChild(IssuedChildToken)
    /// Used, expired, void or unknown: one answer for all.
    case refused
    /// The client address is past its limit; retry after that many milliseconds.
    case limited(retryAfterMs: Int64)
}

/// What a recovery attempt came to.
package enum RecoveryOutcome: Sendable, Equatable {
    /// `revoked`: the account's other tokens revoked with it (`revokeOtherTokens`).
    case recovered(AccountRecord, IssuedToken, revoked: [String])
    /// One answer for every failure; `reason` is for the server's log only.
    case failed(reason: RecoveryFailure)
    /// The address or the handle is past its limit; retry after that many milliseconds.
    case limited(retryAfterMs: Int64, scope: String)
}

/// Why a recovery failed (logged; never answered).
package enum RecoveryFailure: String, Sendable, Equatable {
    case malformedCode, unknownHandle, wrongCode, usedCode
}

/// What deleting an account did.
package struct AccountDeletion: Sendable, Equatable {
    /// The account's tokens revoked (their long-polls end).
    package var revokedTokens: [String]
    /// The households deleted (owned alone, or shared and `delete` was asked).
    package var deletedHouseholds: [String]
    /// The shared households the account left.
    package var leftHouseholds: [String]

    package init(revokedTokens: [String], deletedHouseholds: [String], leftHouseholds: [String]) {
        self.revokedTokens = revokedTokens
        self.deletedHouseholds = deletedHouseholds
        self.leftHouseholds = leftHouseholds
    }
}

/// What `DELETE /v1/me` does with households the account owns that have other members.
package enum OwnedSharedHouseholds: String, Sendable {
    /// Refuse the deletion, listing them (the default).
    case refuse
    /// Delete them with the account: their members' devices see them deleted.
    case delete
}

extension AccountRecord {
    /// The display name a deleted account shows where it still appears (a participant row
    /// of a household it left).
    package static let deletedDisplayName = "Deleted account"

    /// The handle a deleted account's row holds instead of its own, which is retired: never
    /// a valid handle (`~` is not a handle character), so no lookup by handle finds it.
    package static func deletedHandle(id: String) -> String { "~" + id }

    /// Whether `handle` is a deleted account's placeholder.
    package static func isDeletedHandle(_ handle: String) -> Bool { handle.utf8.first == UInt8(ascii: "~") }

    /// How long a deleted account's handle is refused to new accounts: 30 days, in milliseconds.
    package static let retiredHandleMs: Int64 = 30 * 24 * 3600 * 1000
}
