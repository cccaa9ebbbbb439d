/// Who a request acts for: an account, through one of its device tokens.
package struct Caller: Sendable, Equatable {
    package let accountId: String
    package let tokenId: String

    @usableFromInline package init(accountId: String, tokenId: String) {
        (self.accountId, self.tokenId) = (accountId, tokenId)
    }
}
