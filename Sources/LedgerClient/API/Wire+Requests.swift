import Foundation
import LedgerModel

extension Wire {
    /// A child's request (API.md "Child devices and requests") as the feed, the request routes
    /// and a push carry it; a push sends `baseChangeTag` and leaves out the server's members.
    struct Request: Codable, Sendable, Equatable {
        var id: String
        var householdId: String?
        var childId: String
        var kind: String
        /// What was approved once approved, else what was asked.
        var amountCents: Int64
        /// What was asked.
        var requestedCents: Int64?
        var note: String?
        var status: String
        var decidedBy: String?
        var decidedAt: String?
        var decisionNote: String?
        var paymentId: String?
        var createdBy: String?
        var createdAt: String?
        var modifiedAt: String?
        var changeTag: String?
    }

    /// A device paired to a child (`GET …/children/{childId}/devices`).
    struct ChildDevice: Codable, Sendable, Equatable {
        var id: String
        var deviceName: String?
        var name: String?
        var createdAt: String?
        var lastUsedAt: String?
    }
}

extension Wire.Request {
    /// The replica form; nil when a member is malformed.
    func record() -> RequestRecord? {
        guard let kind = RequestRecord.Kind(rawValue: kind), let status = RequestRecord.Status(rawValue: status),
              let createdText = createdAt, let created = Timestamp.parse(createdText) else { return nil }
        let decided = decidedAt.flatMap(Timestamp.parse)
        if decidedAt != nil && decided == nil { return nil }
        let modified = modifiedAt.flatMap(Timestamp.parse) ?? decided ?? created
        return RequestRecord(id: id.lowercased(), childId: childId.lowercased(), kind: kind, amountCents: amountCents,
                             requestedCents: requestedCents ?? amountCents,
                             note: note ?? "", status: status, decidedBy: decidedBy?.lowercased(), decidedAt: decided,
                             decisionNote: decisionNote, paymentId: paymentId?.lowercased(), createdBy: createdBy?.lowercased(),
                             createdAt: created, modifiedAt: modified, changeTag: changeTag)
    }

    /// A local request as an export keeps it: every member but the change tag.
    static func exported(_ r: RequestRecord) -> Wire.Request {
        var w = Wire.Request(r)
        w.paymentId = r.paymentId
        w.createdBy = r.createdBy
        w.createdAt = Timestamp.format(ms: r.createdAt)
        w.modifiedAt = Timestamp.format(ms: r.modifiedAt)
        return w
    }

    /// The push form of a local request (the server's own members left out).
    init(_ r: RequestRecord) {
        self.init(id: r.id, householdId: nil, childId: r.childId, kind: r.kind.rawValue, amountCents: r.amountCents,
                  requestedCents: r.requestedCents, note: r.note, status: r.status.rawValue, decidedBy: r.decidedBy,
                  decidedAt: r.decidedAt.map { Timestamp.format(ms: $0) }, decisionNote: r.decisionNote,
                  paymentId: nil, createdBy: nil, createdAt: nil, modifiedAt: nil, changeTag: nil)
    }
}
