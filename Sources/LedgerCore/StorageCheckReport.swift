import LedgerModel

/// What `kidledger-server check` found in a database: each problem in words, and how many
/// children and transactions it read.
package struct StorageCheckReport: Sendable {
    package var problems: [String]
    package var children: Int
    package var transactions: Int
    package var ok: Bool { problems.isEmpty }

    package init(problems: [String], children: Int, transactions: Int) {
        self.problems = problems
        self.children = children
        self.transactions = transactions
    }

    /// The report of a database whose schema is not this program's (nil when it is).
    package static func schemaMismatch(_ version: Int, known: Int, migrate: String) -> StorageCheckReport? {
        if version == known { return nil }
        let problem = version < known
            ? "schema: the database is at version \(version), this program's is \(known); \(migrate)"
            : "schema: the database is at version \(version), newer than this program's \(known)"
        return StorageCheckReport(problems: [problem], children: 0, transactions: 0)
    }

    package var json: String {
        JSONValue.object(["ok": .bool(ok), "children": .int(Int64(children)), "transactions": .int(Int64(transactions)),
                          "problems": .array(problems.map { .string($0) })]).serializedString
    }
}

extension StorageCheckReport {
    /// What `check` finds wrong with one stored schedule: a document that does not decode, a
    /// child its household does not have, a due instant (the job's index) that is not its
    /// next due date's.
    package static func scheduleProblems(household: String, id: String, child: String, deleted: Bool, document: String,
                                         dueAt: Int64?, childMissing: Bool) -> [String] {
        var problems: [String] = []
        if childMissing { problems.append("schedule: \(id) names child \(child), which its household does not have") }
        guard let s = ScheduleRecord(householdId: household, id: id, childId: child, deleted: deleted, document: document) else {
            return problems + ["schedule: \(id) has a document that does not decode"]
        }
        if s.dueAt != dueAt {
            problems.append("schedule: \(id) is indexed as due at \(dueAt.map { Timestamp.format(ms: $0) } ?? "never"), "
                            + "its next date at \(s.dueAt.map { Timestamp.format(ms: $0) } ?? "never")")
        }
        return problems
    }
}

extension StorageCheckReport {
    /// What `check` finds wrong with one stored request: a document that does not decode, a
    /// child its household does not have, an approval without its payment (or with another
    /// amount or child), a payment of a request that is not approved.
    package static func requestProblems(household: String, id: String, child: String, status: String, document: String,
                                        childMissing: Bool, payment: (amountCents: Int64, childId: String)?) -> [String] {
        var problems: [String] = []
        if childMissing { problems.append("request: \(id) names child \(child), which its household does not have") }
        guard let r = RequestRecord(householdId: household, id: id, childId: child, status: status, document: document) else {
            return problems + ["request: \(id) has a document that does not decode"]
        }
        switch (r.status, payment) {
        case (.approved, nil):
            problems.append("request: \(id) is approved but its payment \(r.paymentId) is missing")
        case (.approved, let p?) where p.amountCents != r.paymentCents(r.approvedCents ?? r.requestedCents) || p.childId != child:
            problems.append("request: \(id) is approved for \(r.approvedCents ?? r.requestedCents) but its payment moves "
                            + "\(p.amountCents) for child \(p.childId)")
        case (.pending, _?), (.declined, _?):
            problems.append("request: \(id) is \(r.status.rawValue) but its payment \(r.paymentId) exists")
        default:
            break
        }
        return problems
    }
}
