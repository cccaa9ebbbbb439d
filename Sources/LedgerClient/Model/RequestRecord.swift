import Foundation
import LedgerModel

/// A child's request as this device holds it: to spend money (`spend`, paid as `-amountCents`)
/// or to be paid for a chore (`chore`, `+amountCents`), pending until a parent decides. Times
/// are milliseconds since the epoch.
struct RequestRecord: Sendable, Equatable {
    enum Kind: String, Sendable, CaseIterable { case spend, chore }
    enum Status: String, Sendable, CaseIterable { case pending, approved, declined }

    var id: String
    var childId: String
    var kind: Kind
    /// The amount asked for; once approved, the amount paid (a parent may approve another one).
    var amountCents: Int64
    /// The amount asked for, whatever was approved.
    var requestedCents: Int64
    /// The child's words.
    var note: String
    var status: Status
    /// The parent account that decided, and when.
    var decidedBy: String?
    var decidedAt: Int64?
    /// A parent's note with a decline.
    var decisionNote: String?
    /// The payment of an approved request: `UUIDv5(N, "request:" + id)`.
    var paymentId: String?
    /// Who asked: the child's device (nil) or a parent's account.
    var createdBy: String?
    var createdAt: Int64
    var modifiedAt: Int64
    var changeTag: String?

    /// The id of the payment an approval of request `id` writes, the same on every device and
    /// the server: UUIDv5(N, "request:" + id).
    static func paymentId(of id: String) -> String {
        UUIDv5.make(namespace: LedgerIDs.namespace, name: "request:" + id.lowercased()).lowercased
    }

    /// The signed amount an approval pays.
    var paymentCents: Int64 { kind == .spend ? -amountCents : amountCents }
}
