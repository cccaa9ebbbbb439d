/// What an answer about one household depends on besides its rows, read in one row: while
/// two stamps of a household are equal, nothing that answer read has changed in between.
///
/// Every write that changes a household's records (children and their balances,
/// transactions, pots, requests, the household itself) advances its change sequence `seq`
/// in the same transaction. Who may read it is the
/// caller's `access` (owner, participant status and permission: invitations, removals,
/// departures, owner transfers and account deletions change it without a sequence of their
/// own). A household deleted and created again under its id is another row (`row`), and a
/// restored database has another `incarnation`. (The schedule job settles a schedule that
/// paid nothing without advancing the sequence: a schedule's answer is not kept by stamp.)
package struct HouseholdReadStamp: Sendable, Equatable {
    /// The household row's own number (`households.n`).
    package var row: Int64
    /// The household's change sequence.
    package var seq: Int64
    /// The database's incarnation.
    package var incarnation: Int64
    /// The account it was read for, and its standing in the household (an account never
    /// invited and the owner both have no participant status: the account tells them apart).
    package var account: String
    package var access: AccessRecord

    @usableFromInline package init(row: Int64, seq: Int64, incarnation: Int64, account: String, access: AccessRecord) {
        (self.row, self.seq, self.incarnation, self.account, self.access) = (row, seq, incarnation, account, access)
    }
}
