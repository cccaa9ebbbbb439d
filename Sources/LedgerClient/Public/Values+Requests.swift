import Foundation

/// Whose ledger this device holds: a parent's (the household), or one child's, after
/// `Ledger.redeemChildCode` paired it to that child.
public enum LedgerMode: Sendable, Equatable, Hashable {
    case parent
    /// Paired to the child with this id: only that child's snapshot, history, pots, schedules
    /// and requests, and making requests; every other call throws `.notAllowed`.
    case child(String)
}

/// A request a child makes of its parents: to spend money, or to be paid for a chore.
public enum RequestDraft: Sendable, Equatable, Hashable {
    /// Spending `cents` (paid as a withdrawal when approved).
    case spend(cents: Int64, note: String)
    /// Being paid `cents` for a chore.
    case chore(cents: Int64, note: String)
}

/// A child's request and what became of it.
public struct ChildRequest: Sendable, Equatable, Hashable, Identifiable {
    public enum Kind: String, Sendable, Equatable, Hashable, CaseIterable { case spend, chore }
    public enum Status: String, Sendable, Equatable, Hashable, CaseIterable { case pending, approved, declined }

    public var id: String
    public var childId: String
    public var kind: Kind
    /// The amount asked for; once approved, the amount paid.
    public var amountCents: Int64
    public var note: String
    public var status: Status
    /// The parent account that decided, and when.
    public var decidedBy: String?
    public var decidedAt: Date?
    /// A decline's note.
    public var decisionNote: String?
    /// The payment of an approved request (`UUIDv5(N, "request:" + id)`).
    public var paymentId: String?
    public var createdAt: Date
    /// True while the request (or this device's decision) waits to be uploaded.
    public var isPending: Bool
}

/// A device paired to a child (`Ledger.childDevices(of:)`).
public struct ChildDevice: Sendable, Equatable, Hashable, Identifiable {
    /// The device's token id: what `revokeChildDevice` takes.
    public var id: String
    public var name: String?
    public var createdAt: Date?
    public var lastUsedAt: Date?
}
