/// A change-feed position, bound to one household, one incarnation of it and one incarnation
/// of the database: every change of the household with a sequence value up to `seq` has been
/// delivered. It is valid only while the household keeps that incarnation, the database keeps
/// its incarnation (a restore or a rewind gives it a new one) and the household's sequence has
/// reached `seq` (`LedgerReading.feedPage`); the wire form is an opaque token (the HTTP edge's).
package struct SyncPosition: Equatable, Sendable {
    /// Lowercase household id.
    package let household: String
    /// `households.incarnation` when the position was handed out.
    package let incarnation: Int64
    package let seq: Int64
    /// `database_incarnation.incarnation` when the position was handed out; nil for a token
    /// of an earlier version, which named none.
    package let database: Int64?
    /// The child of a child's feed (`GET …/children/{childId}/changes`); nil for the
    /// household's feed. Each feed refuses the other's positions.
    package let child: String?

    package init(household: String, incarnation: Int64, seq: Int64, database: Int64? = nil, child: String? = nil) {
        (self.household, self.incarnation, self.seq, self.database) = (household, incarnation, seq, database)
        self.child = child
    }

    /// What a token that names no position stands for: a position of no household, which
    /// every feed refuses as expired once the caller's access was checked.
    package static let nowhere = SyncPosition(household: "", incarnation: 0, seq: -1)
}
