extension Wire {
    /// `POST /v1/auth/{provider}`: the account, this device's new token, and whether the
    /// account was made by this call (201) or already linked (200).
    struct SignIn: Codable, Sendable, Equatable {
        var account: Account
        var token: Token
        var created: Bool?
    }

    /// `POST /v1/link-codes/redeem`: a parent's code answers with the account and a token; a
    /// child device's code with `child` instead of `account`.
    struct Redeemed: Codable, Sendable, Equatable {
        var account: Account?
        var token: Token
        var child: RedeemedChild?
    }

    /// The child a child device's code pairs (`POST /v1/link-codes/redeem`).
    struct RedeemedChild: Codable, Sendable, Equatable {
        var householdId: String
        var childId: String
        var name: String?
    }

    /// An identity of another provider linked to the account (`/v1/me/identities`).
    struct Identity: Codable, Sendable, Equatable {
        var id: String
        var provider: String
        var issuer: String?
        var linkedAt: String?
    }

    /// `POST /v1/link-codes`: a code another device redeems within its lifetime.
    struct LinkCode: Codable, Sendable, Equatable {
        var code: String
        var expiresAt: String
        /// A URL for a QR code, when the server offers one.
        var url: String?
    }

    /// `POST /v1/me/recovery-codes`: a new set of one-time recovery codes.
    struct RecoveryCodes: Codable, Sendable, Equatable {
        var codes: [String]
        var createdAt: String?
    }

    /// `GET /v1/me/recovery-codes`: how many codes of the current set are unused.
    struct RecoveryCodeStatus: Codable, Sendable, Equatable {
        var remaining: Int
        var createdAt: String?
    }

    /// `POST /v1/households/{id}/owner`: the household with its new owner (`ownerId`; the
    /// household form's `ownerAccountId` is read too).
    struct TransferredHousehold: Codable, Sendable, Equatable {
        var id: String
        var name: String?
        var ownerId: String?
        var ownerAccountId: String?
        var changeTag: String?
    }
}
