import Foundation
import LedgerModel

/// A child's device: a token that belongs to no account, scoped to one child of one
/// household (`ChildScope`). It lives with the household: the parent who paired it may
/// leave, lose access or delete their account and the device stays paired; deleting the
/// household, or a parent revoking the device, ends it.
package struct ChildDeviceRecord: Sendable, Equatable {
    package var id: String
    package var householdId: String
    package var childId: String
    package var deviceName: String
    /// The account that issued the code the device redeemed.
    package var pairedBy: String
    package var createdAt: Int64

    package init(id: String, householdId: String, childId: String, deviceName: String, pairedBy: String, createdAt: Int64) {
        (self.id, self.householdId, self.childId, self.deviceName) = (id, householdId, childId, deviceName)
        (self.pairedBy, self.createdAt) = (pairedBy, createdAt)
    }

    /// `id, household_id, child_id, device_name, paired_by, created_at` of a row.
    package init<Row: StorageRow>(row r: Row, at c: Int = 0) {
        self.init(id: r.id(c), householdId: r.id(c + 1), childId: r.id(c + 2), deviceName: r.string(c + 3),
                  pairedBy: r.id(c + 4), createdAt: r.time(c + 5))
    }

    /// `{id, kind: "child", householdId, childId, deviceName, pairedBy, createdAt}`.
    package var json: JSONValue {
        .object(["id": .string(id), "kind": .string("child"), "householdId": .string(householdId), "childId": .string(childId),
                 "deviceName": .string(deviceName), "pairedBy": .string(pairedBy),
                 "createdAt": .string(Timestamp.format(ms: createdAt))])
    }
}

/// A child token just made: its record and its secret (shown once).
package struct IssuedChildToken: Sendable, Equatable {
    package var record: ChildDeviceRecord
    package var secret: String
    /// The child's name when it was paired.
    package var childName: String

    package init(record: ChildDeviceRecord, secret: String, childName: String) {
        (self.record, self.secret, self.childName) = (record, secret, childName)
    }
}

/// What a link code issued for a child's device pairs: kept beside the code.
package struct ChildLinkScope: Sendable, Equatable {
    package var householdId: String
    package var childId: String
    package var deviceName: String?

    package init(householdId: String, childId: String, deviceName: String?) {
        (self.householdId, self.childId, self.deviceName) = (householdId, childId, deviceName)
    }
}

/// A child's request: money to spend (`spend`, paid as `-amountCents`) or a chore done
/// (`chore`, paid as `+amountCents`), pending until a parent approves or declines it. The
/// first decision the server stores is final (see docs/children.md).
package struct RequestRecord: Sendable, Equatable {
    package enum Kind: String, Sendable { case spend, chore }
    package enum Status: String, Sendable { case pending, approved, declined }

    package var id: String
    package var householdId: String
    package var childId: String
    package var kind: Kind
    /// What the child asked for (a spend) or proposed (a chore), in cents, 1 … 100_000_000_000.
    package var requestedCents: Int64
    /// What was approved (nil unless approved).
    package var approvedCents: Int64?
    package var note: String
    package var status: Status
    /// The account that approved or declined it.
    package var decidedBy: String?
    package var decidedAt: Int64?
    package var decisionNote: String?
    /// Who made it: an account's id, or nil when the child's device made it.
    package var createdBy: String?
    /// The token of the device that made it.
    package var createdByDevice: String
    package var createdAt: Int64
    package var modifiedAt: Int64
    package var changeTag: String

    package init(id: String, householdId: String, childId: String, kind: Kind, requestedCents: Int64, approvedCents: Int64? = nil,
                 note: String, status: Status = .pending, decidedBy: String? = nil, decidedAt: Int64? = nil,
                 decisionNote: String? = nil, createdBy: String?, createdByDevice: String, createdAt: Int64,
                 modifiedAt: Int64, changeTag: String) {
        (self.id, self.householdId, self.childId, self.kind) = (id, householdId, childId, kind)
        (self.requestedCents, self.approvedCents, self.note, self.status) = (requestedCents, approvedCents, note, status)
        (self.decidedBy, self.decidedAt, self.decisionNote) = (decidedBy, decidedAt, decisionNote)
        (self.createdBy, self.createdByDevice, self.createdAt) = (createdBy, createdByDevice, createdAt)
        (self.modifiedAt, self.changeTag) = (modifiedAt, changeTag)
    }

    /// The id of the payment an approval writes: UUIDv5(N, "request:" + id).
    package var paymentId: String { RequestRecord.paymentId(of: id) }

    package static func paymentId(of id: String) -> String {
        RequestIDs.payment(requestId: LedgerIDs.parse(id) ?? UUID(), sha1: .openSSL).lowercased
    }

    /// What the payment of an approval of `cents` moves: a spend takes, a chore gives.
    package func paymentCents(_ cents: Int64) -> Int64 { kind == .spend ? -cents : cents }

    /// The same request, as far as its maker is concerned (a repeated POST or push).
    package func sameRequest(as other: RequestRecord) -> Bool {
        childId == other.childId && kind == other.kind && requestedCents == other.requestedCents && note == other.note
    }

    /// The API JSON form: `{id, householdId, childId, kind, amountCents, requestedCents, note,
    /// status, decidedBy, decidedAt, decisionNote, paymentId, createdBy, createdAt,
    /// modifiedAt, changeTag}`; `amountCents` is what was approved once approved, else what
    /// was asked; `paymentId` is null unless approved.
    package var json: JSONValue {
        .object([
            "id": .string(id), "householdId": .string(householdId), "childId": .string(childId), "kind": .string(kind.rawValue),
            "amountCents": .int(approvedCents ?? requestedCents), "requestedCents": .int(requestedCents), "note": .string(note),
            "status": .string(status.rawValue), "decidedBy": decidedBy.map { .string($0) } ?? .null,
            "decidedAt": decidedAt.map { .string(Timestamp.format(ms: $0)) } ?? .null,
            "decisionNote": decisionNote.map { .string($0) } ?? .null,
            "paymentId": status == .approved ? .string(paymentId) : .null,
            "createdBy": createdBy.map { .string($0) } ?? .null,
            "createdAt": .string(Timestamp.format(ms: createdAt)), "modifiedAt": .string(Timestamp.format(ms: modifiedAt)),
            "changeTag": .string(changeTag),
        ])
    }

    // MARK: stored form

    /// What the database keeps beside the columns it queries (household, id, child, seq,
    /// status, created_at): one JSON object, the same on both backends.
    package var document: String {
        let o: JSONObject = [
            "kind": .string(kind.rawValue), "requestedCents": .int(requestedCents),
            "approvedCents": approvedCents.map { .int($0) } ?? .null, "note": .string(note),
            "decidedBy": decidedBy.map { .string($0) } ?? .null, "decidedAt": decidedAt.map { .int($0) } ?? .null,
            "decisionNote": decisionNote.map { .string($0) } ?? .null, "createdBy": createdBy.map { .string($0) } ?? .null,
            "createdByDevice": .string(createdByDevice), "createdAt": .int(createdAt), "modifiedAt": .int(modifiedAt),
            "changeTag": .string(changeTag),
        ]
        return JSONValue.object(o).serializedString
    }

    /// The record of a stored row; nil when its document does not decode (`check` says so).
    package init?(householdId: String, id: String, childId: String, status: String, document: String) {
        guard let status = Status(rawValue: status), case .object(let o)? = try? JSONValue.parse(document),
              let kind = o["kind"]?.stringValue.flatMap(Kind.init(rawValue:)),
              let requested = o["requestedCents"]?.intValue, let note = o["note"]?.stringValue,
              let device = o["createdByDevice"]?.stringValue, let createdAt = o["createdAt"]?.intValue,
              let modifiedAt = o["modifiedAt"]?.intValue, let changeTag = o["changeTag"]?.stringValue else { return nil }
        self.init(id: id, householdId: householdId, childId: childId, kind: kind, requestedCents: requested,
                  approvedCents: o["approvedCents"]?.intValue, note: note, status: status,
                  decidedBy: o["decidedBy"]?.stringValue, decidedAt: o["decidedAt"]?.intValue,
                  decisionNote: o["decisionNote"]?.stringValue, createdBy: o["createdBy"]?.stringValue,
                  createdByDevice: device, createdAt: createdAt, modifiedAt: modifiedAt, changeTag: changeTag)
    }

    /// `household_id, id, child_id, status, doc` of a row.
    package init?<Row: StorageRow>(row r: Row, at c: Int = 0) {
        self.init(householdId: r.id(c), id: r.id(c + 1), childId: r.id(c + 2), status: r.string(c + 3), document: r.string(c + 4))
    }
}

/// What a decision on a request came to: the request as stored, and the payment when it
/// was approved. `changed` is false when the same decision was already there.
package struct RequestDecision: Sendable, Equatable {
    package var request: RequestRecord
    package var payment: LedgerTransaction?
    package var changed: Bool

    package init(request: RequestRecord, payment: LedgerTransaction?, changed: Bool) {
        (self.request, self.payment, self.changed) = (request, payment, changed)
    }
}
