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
        var amountCents: Int64
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
        var baseChangeTag: String?
    }

    /// The answer of `…/approve` and `…/decline`: the request and the approval's payment.
    struct Decision: Decodable, Sendable, Equatable {
        var request: Request
        var transaction: Transaction?
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
                             note: note ?? "", status: status, decidedBy: decidedBy?.lowercased(), decidedAt: decided,
                             decisionNote: decisionNote, paymentId: paymentId?.lowercased(), createdBy: createdBy?.lowercased(),
                             createdAt: created, modifiedAt: modified, changeTag: changeTag)
    }

    /// The push form of a local request.
    init(_ r: RequestRecord) {
        self.init(id: r.id, householdId: nil, childId: r.childId, kind: r.kind.rawValue, amountCents: r.amountCents,
                  note: r.note, status: r.status.rawValue, decidedBy: r.decidedBy,
                  decidedAt: r.decidedAt.map { Timestamp.format(ms: $0) }, decisionNote: r.decisionNote,
                  paymentId: r.paymentId, createdBy: nil, createdAt: Timestamp.format(ms: r.createdAt),
                  modifiedAt: Timestamp.format(ms: r.modifiedAt), changeTag: nil, baseChangeTag: r.changeTag)
    }
}
