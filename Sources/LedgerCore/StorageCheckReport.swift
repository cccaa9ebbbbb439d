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
