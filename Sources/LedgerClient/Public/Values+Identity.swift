import Foundation

/// A household's id (a lowercase UUID).
public typealias HouseholdID = String

/// A household the signed-in account owns or has joined (`Ledger.households()`).
public struct HouseholdSummary: Sendable, Equatable, Hashable, Identifiable {
    public var id: HouseholdID
    public var name: String
    /// ISO 4217 code, e.g. `USD`.
    public var currency: String
    /// `owner`, or `participant` for a household joined from an invitation.
    public var role: Role
    public var permission: Permission
    /// True when the household has a share (others may be invited or take part).
    public var shared: Bool
    public var ownerAccountId: String?

    public init(id: HouseholdID, name: String, currency: String, role: Role, permission: Permission, shared: Bool,
                ownerAccountId: String? = nil) {
        self.id = id
        self.name = name
        self.currency = currency
        self.role = role
        self.permission = permission
        self.shared = shared
        self.ownerAccountId = ownerAccountId
    }
}

/// The account to make when an identity signs in for the first time.
public struct NewAccount: Sendable, Equatable, Hashable {
    /// 3 … 32 of `a-z 0-9 _ -`; how others invite this person.
    public var handle: String
    public var displayName: String

    public init(handle: String, displayName: String) {
        self.handle = handle
        self.displayName = displayName
    }
}

/// What a sign-in with an identity, a link code or a recovery code did.
public struct SignInOutcome: Sendable, Equatable {
    /// The account this device is now signed in as.
    public var account: Account
    /// True when the sign-in made the account (an identity signing in with `newAccount`).
    public var created: Bool
    /// The households the account owns or has joined; nil when they could not be listed
    /// (offline): `households()` lists them later.
    public var households: [HouseholdSummary]?
    /// The household opened on this device because it is the account's only one; nil when the
    /// account has none or several (the app lets the person choose and calls `open(household:)`),
    /// or when this device holds a different ledger that opening would replace. An opening
    /// interrupted by the network finishes with the next sync.
    public var openedHousehold: HouseholdSummary?

    public init(account: Account, created: Bool, households: [HouseholdSummary]?, openedHousehold: HouseholdSummary?) {
        self.account = account
        self.created = created
        self.households = households
        self.openedHousehold = openedHousehold
    }
}

/// A single-use code that signs another device in to this account (`Ledger.createLinkCode()`).
public struct LinkCode: Sendable, Equatable, Hashable {
    /// The code as a person types it: `XXXX-XXXX-XXXX` (read in any case; hyphens and spaces ignored).
    public var text: String
    /// When the code stops working (10 minutes after it was made).
    public var expiresAt: Date
    /// A URL carrying the code, to show as a QR code, when the server offers one.
    public var url: URL?

    public init(text: String, expiresAt: Date, url: URL? = nil) {
        self.text = text
        self.expiresAt = expiresAt
        self.url = url
    }
}

/// An identity of a sign-in provider (Sign in with Apple, an OpenID Connect provider) linked
/// to the signed-in account.
public struct LinkedIdentity: Sendable, Equatable, Hashable, Identifiable {
    public var id: String
    /// The provider's name on the server, e.g. `apple`.
    public var provider: String
    public var issuer: String?
    public var linkedAt: Date?

    public init(id: String, provider: String, issuer: String?, linkedAt: Date?) {
        self.id = id
        self.provider = provider
        self.issuer = issuer
        self.linkedAt = linkedAt
    }
}

/// How many of the account's recovery codes are left.
public struct RecoveryCodeStatus: Sendable, Equatable, Hashable {
    /// Codes of the current set not used yet (0 when none were ever made).
    public var remaining: Int
    /// When the current set was made; nil when none was.
    public var createdAt: Date?

    public init(remaining: Int, createdAt: Date?) {
        self.remaining = remaining
        self.createdAt = createdAt
    }
}

/// What `Ledger.deleteAccount` did.
public struct AccountDeletion: Sendable, Equatable {
    /// Where the ledger was exported before the account was deleted, when an export was asked for.
    public var exportedTo: URL?
    /// The sentence to show about App Store subscriptions (`Ledger.subscriptionCancellationNotice`).
    public var subscriptionNotice: String

    public init(exportedTo: URL?, subscriptionNotice: String) {
        self.exportedTo = exportedTo
        self.subscriptionNotice = subscriptionNotice
    }
}
