/// A change-feed position, bound to one household and one incarnation of it: every change
/// of the household with a sequence value up to `seq` has been delivered. It is valid only
/// while the household keeps that incarnation and its sequence has reached `seq`
/// (`LedgerReading.feedPage`); the wire form is an opaque token (the HTTP edge's).
package struct SyncPosition: Equatable, Sendable {
    /// Lowercase household id.
    package let household: String
    /// `households.incarnation` when the position was handed out.
    package let incarnation: Int64
    package let seq: Int64

    package init(household: String, incarnation: Int64, seq: Int64) {
        (self.household, self.incarnation, self.seq) = (household, incarnation, seq)
    }

    /// What a token that names no position stands for: a position of no household, which
    /// every feed refuses as expired once the caller's access was checked.
    package static let nowhere = SyncPosition(household: "", incarnation: 0, seq: -1)
}
