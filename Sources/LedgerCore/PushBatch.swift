import LedgerModel

/// The records a device pushes in one `POST …/changes` (applied by `LedgerWriting.push`):
/// each one valid, or already known to be rejected and why.
package struct PushBatch: Sendable {
    /// A child as a device pushes it.
    package struct ChildRecord: Sendable {
        package var id: String
        package var name: String
        package var sortOrder: Int64
        package var archived: Bool
        package var createdAt: Int64
        package var modifiedAt: Int64
        package var modifiedBy: String
        package var baseChangeTag: String?

        package init(id: String, name: String, sortOrder: Int64, archived: Bool, createdAt: Int64, modifiedAt: Int64,
                     modifiedBy: String, baseChangeTag: String? = nil) {
            (self.id, self.name, self.sortOrder, self.archived, self.createdAt) = (id, name, sortOrder, archived, createdAt)
            (self.modifiedAt, self.modifiedBy, self.baseChangeTag) = (modifiedAt, modifiedBy, baseChangeTag)
        }
    }

    /// A schedule as a device pushes it: the schedule, whether it is deleted, and whether
    /// its edit asks for back pay.
    package struct ScheduleItem: Sendable {
        package var draft: ScheduleDraft
        package var deleted: Bool
        package var backPay: Bool
        package var createdAt: Int64
        package var modifiedAt: Int64
        package var modifiedBy: String
        package var baseChangeTag: String?

        package init(draft: ScheduleDraft, deleted: Bool, backPay: Bool, createdAt: Int64, modifiedAt: Int64,
                     modifiedBy: String, baseChangeTag: String? = nil) {
            (self.draft, self.deleted, self.backPay, self.createdAt) = (draft, deleted, backPay, createdAt)
            (self.modifiedAt, self.modifiedBy, self.baseChangeTag) = (modifiedAt, modifiedBy, baseChangeTag)
        }
    }

    /// A child's request as a device pushes it: made (pending) or decided offline.
    package struct RequestItem: Sendable {
        package var id: String
        package var childId: String
        package var kind: RequestRecord.Kind
        package var requestedCents: Int64
        package var note: String
        package var status: RequestRecord.Status
        /// What an approval pays (nil: what was asked).
        package var approvedCents: Int64?
        package var decisionNote: String?
        package var decidedBy: String?
        package var decidedAt: Int64?

        package init(id: String, childId: String, kind: RequestRecord.Kind, requestedCents: Int64, note: String,
                     status: RequestRecord.Status, approvedCents: Int64? = nil, decisionNote: String? = nil,
                     decidedBy: String? = nil, decidedAt: Int64? = nil) {
            (self.id, self.childId, self.kind, self.requestedCents, self.note) = (id, childId, kind, requestedCents, note)
            (self.status, self.approvedCents, self.decisionNote) = (status, approvedCents, decisionNote)
            (self.decidedBy, self.decidedAt) = (decidedBy, decidedAt)
        }
    }

    /// A record that parsed, or why it is rejected: a `code` (`validation_failed` with the
    /// field errors, `clock_skew`).
    package enum Item<Record: Sendable>: Sendable {
        case valid(Record)
        case invalid(id: String, code: String, fields: [String: String])
    }

    package var children: [Item<ChildRecord>] = []
    package var transactions: [Item<NewTransaction>] = []
    package var schedules: [Item<ScheduleItem>] = []
    package var requests: [Item<RequestItem>] = []
    /// The author a transaction names (`authorAccountId`), by transaction id, when the
    /// record names one; without it the author is the caller.
    package var authors: [String: String] = [:]
    /// The owner restores the household from their device: records may name another
    /// account that is or was a member as their author (`modifiedBy`, `authorAccountId`).
    package var ownerRestore = false

    package init(children: [Item<ChildRecord>] = [], transactions: [Item<NewTransaction>] = [],
                 schedules: [Item<ScheduleItem>] = []) {
        (self.children, self.transactions, self.schedules) = (children, transactions, schedules)
    }

    package var count: Int { children.count + transactions.count + schedules.count + requests.count }
}
