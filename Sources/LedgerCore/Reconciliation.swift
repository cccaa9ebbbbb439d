import LedgerModel

/// What a device asks in one `POST …/reconcile`: summaries of the transaction ids it holds,
/// whole per child and per bucket, and lists of ids, each to be compared with the server's
/// (`ReconcileDigest`).
package struct ReconcileQuery: Sendable {
    package struct ChildDigest: Sendable {
        package var childId: String
        package var summary: ReconcileDigest.Summary
        package init(childId: String, summary: ReconcileDigest.Summary) { (self.childId, self.summary) = (childId, summary) }
    }

    package struct BucketDigest: Sendable {
        package var childId: String
        package var bucket: Int
        package var summary: ReconcileDigest.Summary
        package init(childId: String, bucket: Int, summary: ReconcileDigest.Summary) {
            (self.childId, self.bucket, self.summary) = (childId, bucket, summary)
        }
    }

    package struct IdList: Sendable {
        package var childId: String
        package var ids: [String]
        package init(childId: String, ids: [String]) { (self.childId, self.ids) = (childId, ids) }
    }

    package var children: [ChildDigest] = []
    package var buckets: [BucketDigest] = []
    package var ids: [IdList] = []
    /// Request ids the device holds: the answer names those the server lacks
    /// (`ReconcileAnswer.missingRequests`). Requests are few (a child asks a few times a day),
    /// so they are compared by id, not by summaries.
    package var requests: [String] = []

    package init(children: [ChildDigest] = [], buckets: [BucketDigest] = [], ids: [IdList] = [], requests: [String] = []) {
        (self.children, self.buckets, self.ids, self.requests) = (children, buckets, ids, requests)
    }

    /// Every child the query names, each once.
    var childIds: Set<String> {
        Set(children.map(\.childId)).union(buckets.map(\.childId)).union(ids.map(\.childId))
    }
}

/// The server's side of a `ReconcileQuery`.
package struct ReconcileAnswer: Sendable {
    package struct ChildAnswer: Sendable {
        package var childId: String
        /// The server's child; nil when it holds no child with that id.
        package var child: Child?
        package var summary: ReconcileDigest.Summary
        package var match: Bool
    }

    package struct BucketAnswer: Sendable {
        package var childId: String
        package var bucket: Int
        package var summary: ReconcileDigest.Summary
        package var match: Bool
    }

    package var children: [ChildAnswer] = []
    package var buckets: [BucketAnswer] = []
    /// Ids of the query's lists that the server does not hold, in the order asked.
    package var missing: [String] = []
    /// The query's request ids that the server does not hold (in this household), in the order asked.
    package var missingRequests: [String] = []
}

extension LedgerReading {
    /// `POST …/reconcile` for a member: the server's summaries beside the device's, and which
    /// listed ids it lacks. Reads the ids of the children the query names once each (the
    /// whole household's at once when it names several).
    package func reconcile(household: String, account: String, _ query: ReconcileQuery) throws -> ReconcileAnswer {
        _ = try membership(household: household, account: account, need: .read)
        let named = query.childIds
        let known = Dictionary(try children(household: household, includeArchived: true).map { ($0.id, $0) },
                               uniquingKeysWith: { a, _ in a })
        var summaries: [String: ReconcileDigest.ChildSummary] = [:]
        var idSets: [String: Set<String>] = [:]
        let wantIds = Set(query.ids.map(\.childId))
        let pairs: [(childId: String, id: String)]
        if named.count == 1, let only = named.first {
            pairs = known[only] == nil ? [] : try transactionIds(household: household, child: only)
        } else if named.isEmpty {
            pairs = []
        } else {
            pairs = try transactionIds(household: household, child: nil)
        }
        for p in pairs where named.contains(p.childId) {
            summaries[p.childId, default: ReconcileDigest.ChildSummary()].add(id: p.id)
            if wantIds.contains(p.childId) { idSets[p.childId, default: []].insert(p.id) }
        }
        var answer = ReconcileAnswer()
        for c in query.children {
            let s = summaries[c.childId]?.whole ?? ReconcileDigest.Summary()
            answer.children.append(.init(childId: c.childId, child: known[c.childId], summary: s, match: s == c.summary))
        }
        for b in query.buckets {
            let s = summaries[b.childId]?.buckets[b.bucket] ?? ReconcileDigest.Summary()
            answer.buckets.append(.init(childId: b.childId, bucket: b.bucket, summary: s, match: s == b.summary))
        }
        for list in query.ids {
            let held = idSets[list.childId] ?? []
            answer.missing += list.ids.filter { !held.contains($0) }
        }
        for id in query.requests where try request(household: household, id: id) == nil {
            answer.missingRequests.append(id)
        }
        return answer
    }
}
