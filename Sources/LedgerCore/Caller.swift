/// Who a request acts for: an account, through one of its device tokens; or a child's
/// device, through a child token (`child` set), which belongs to no account.
package struct Caller: Sendable, Equatable {
    package let accountId: String
    package let tokenId: String
    /// The one child a child token may see; nil for an account's token.
    package let child: ChildScope?

    @usableFromInline package init(accountId: String, tokenId: String) {
        (self.accountId, self.tokenId, self.child) = (accountId, tokenId, nil)
    }

    /// The caller of a child token: its `accountId` is `Caller.noAccount`, which names no
    /// account, so a rule that looks the caller up as an account finds no membership (404).
    package init(childToken tokenId: String, scope: ChildScope) {
        (self.accountId, self.tokenId, self.child) = (Caller.noAccount, tokenId, scope)
    }

    /// The account id of a child caller: the nil UUID, never an account's.
    package static let noAccount = "00000000-0000-0000-0000-000000000000"

    package var isChild: Bool { child != nil }

    /// Whether the caller may see a record of `child`: always for an account (its access to
    /// the household is checked apart), only its own child for a child token.
    package func maySee(child: String) -> Bool { self.child.map { $0.childId == child } ?? true }
}

/// What a child token may see: one child of one household.
package struct ChildScope: Sendable, Equatable, Hashable {
    package let householdId: String
    package let childId: String

    package init(householdId: String, childId: String) {
        (self.householdId, self.childId) = (householdId, childId)
    }
}
