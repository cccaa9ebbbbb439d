import LedgerModel

extension SyncEngine {
    /// What one reconciliation pass found and did.
    struct ReconcileOutcome: Sendable, Equatable {
        /// Records of this device's account queued to be pushed again.
        var queued = 0
        /// Records the server lacks that this device may not push: another member's (or the
        /// transactions of a child only another member may push back, or reversals of such
        /// records). They stay here, unconfirmed, until their author's device reconciles or the
        /// owner restores from this device.
        var waiting = 0
        /// Ids sent to the server for comparison (the last, per-bucket step).
        var idsCompared = 0
        /// Requests made.
        var requests = 0
    }

    /// Most ids per reconcile request (the server takes 10,000), buckets (16,384) and children (1,000).
    static let reconcileIdsPerRequest = 5_000
    static let reconcileBucketsPerRequest = 8_192
    static let reconcileChildrenPerRequest = 500

    /// After `history_rewound` and a fresh pull: finds the records this device holds that the
    /// server lacks, by summaries of ids per child, then per bucket, then the ids of the
    /// buckets that differ (what moves grows with what is missing, not with the ledger), and
    /// queues those it may push again: its own account's records (every record during the
    /// owner's restore from this device), each transaction after the one it reverses; and
    /// the requests it made or decided, found by id.
    /// Call after a pull; the push that follows sends them with their ids, amounts and times.
    func reconcile() throws -> ReconcileOutcome {
        let householdId = try store.household().id
        let me = try store.string(.accountId) ?? ""
        let everything = try store.string(.ownerRestore) != nil
        var outcome = ReconcileOutcome()
        let api = self.api

        var summaries: [String: ReconcileDigest.ChildSummary] = [:]
        for (child, id) in try store.transactionIds() { summaries[child, default: ReconcileDigest.ChildSummary()].add(id: id) }
        let local = try store.children()
        let localById = Dictionary(local.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })

        // 1. Whole children.
        var answers: [Wire.ReconcileResponse.ChildAnswer] = []
        for chunk in local.chunked(Self.reconcileChildrenPerRequest) {
            try checkCancelled()
            var request = Wire.ReconcileRequest()
            request.children = chunk.map { c in
                let s = summaries[c.id]?.whole ?? ReconcileDigest.Summary()
                return .init(childId: c.id, count: s.count, digest: s.digest)
            }
            answers += try retrying { () throws(APIError) in try api.reconcile(householdId: householdId, request) }.children
            outcome.requests += 1
        }
        var childrenToPush: [(ChildRecord, tag: String?)] = []
        var blocked = Set<String>()
        var whollyMissing: [String] = []
        var differing: [String] = []
        for answer in answers {
            guard let child = localById[answer.childId] else { continue }
            let mayPush = everything || child.modifiedBy == me
            guard answer.known else {
                if mayPush {
                    childrenToPush.append((child, nil))
                    whollyMissing.append(child.id)
                } else {
                    blocked.insert(child.id)
                    outcome.waiting += 1 + (summaries[child.id]?.whole.count ?? 0)
                }
                continue
            }
            if let server = answer.child?.record(),
               LWW.wins((child.modifiedAt, child.modifiedBy), over: (server.modifiedAt, server.modifiedBy)) {
                // An edit the server lost: its author's device brings it back.
                if mayPush { childrenToPush.append((child, server.changeTag)) } else { outcome.waiting += 1 }
            }
            if !answer.match { differing.append(child.id) }
        }

        // 2. Buckets of the children whose summaries differ: only those this device has ids in.
        var bucketsToList: [String: Set<Int>] = [:]
        var bucketDigests: [Wire.ReconcileRequest.BucketDigest] = []
        for child in differing {
            guard let s = summaries[child] else { continue }
            for (bucket, summary) in s.buckets.enumerated() where summary.count > 0 {
                bucketDigests.append(.init(childId: child, bucket: bucket, count: summary.count, digest: summary.digest))
            }
        }
        for chunk in bucketDigests.chunked(Self.reconcileBucketsPerRequest) {
            try checkCancelled()
            var request = Wire.ReconcileRequest()
            request.buckets = Array(chunk)
            let answer = try retrying { () throws(APIError) in try api.reconcile(householdId: householdId, request) }
            outcome.requests += 1
            for b in answer.buckets where !b.match { bucketsToList[b.childId, default: []].insert(b.bucket) }
        }

        // 3. The ids of the buckets that differ.
        var lists: [Wire.ReconcileRequest.IdList] = []
        for (child, buckets) in bucketsToList.sorted(by: { $0.key < $1.key }) {
            let ids = try store.transactionIds(child: child).map(\.id)
                .filter { buckets.contains(ReconcileDigest.bucket(ReconcileDigest.hash($0))) }
            for part in ids.chunked(Self.reconcileIdsPerRequest) { lists.append(.init(childId: child, ids: Array(part))) }
        }
        var missing: [String] = []
        var request = Wire.ReconcileRequest()
        func send() throws {
            guard !request.ids.isEmpty else { return }
            try checkCancelled()
            let sent = request
            missing += try retrying { () throws(APIError) in try api.reconcile(householdId: householdId, sent) }.missing
            outcome.requests += 1
            request = Wire.ReconcileRequest()
        }
        for list in lists {
            if request.ids.reduce(0, { $0 + $1.ids.count }) + list.ids.count > Self.reconcileIdsPerRequest { try send() }
            request.ids.append(list)
            outcome.idsCompared += list.ids.count
        }
        try send()
        for child in whollyMissing { missing += try store.transactionIds(child: child).map(\.id) }

        // 4. Requests, by id: a household holds few.
        let localRequests = try store.requests()
        var missingRequests: [String] = []
        for chunk in localRequests.map(\.id).chunked(Self.reconcileIdsPerRequest) {
            try checkCancelled()
            var request = Wire.ReconcileRequest()
            request.requests = Array(chunk)
            let sent = request
            missingRequests += try retrying { () throws(APIError) in try api.reconcile(householdId: householdId, sent) }.missingRequests ?? []
            outcome.requests += 1
            outcome.idsCompared += chunk.count
        }

        // Queue what this device may push: targets before their reversals, and a reversal
        // only with what it reverses.
        try store.transaction {
            for (child, tag) in childrenToPush {
                if let tag { try store.setChangeTag(childId: child.id, tag) }
                try store.enqueue(.child, id: child.id)
            }
            let missingIds = Set(missing)
            var records = try missing.compactMap { try store.transaction(id: $0) }
            records.sort { ($0.reversesId == nil ? 0 : 1, $0.createdAt, $0.id) < ($1.reversesId == nil ? 0 : 1, $1.createdAt, $1.id) }
            var queued = Set<String>()
            for t in records {
                let mayPush = everything || t.authorAccountId == nil || t.authorAccountId == me
                if blocked.contains(t.childId) { continue }   // counted with its child
                if !mayPush { outcome.waiting += 1; continue }
                if let target = t.reversesId, missingIds.contains(target), !queued.contains(target) {
                    outcome.waiting += 1
                    continue
                }
                try store.enqueue(.transaction, id: t.id)
                queued.insert(t.id)
            }
            // Requests this device made or decided (every one during the owner's restore); the
            // server applies a pushed request before the push's transactions, and writes an
            // approval's payment itself.
            let requestsById = Dictionary(localRequests.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
            var requeued = 0
            for id in missingRequests {
                guard let r = requestsById[id] else { continue }
                let mayPush = everything || r.createdBy == me || (r.decidedBy != nil && r.decidedBy == me)
                if blocked.contains(r.childId) || !mayPush { outcome.waiting += 1; continue }
                try store.enqueue(.request, id: id)
                requeued += 1
            }
            outcome.queued = childrenToPush.count + queued.count + requeued
        }
        return outcome
    }

    /// Runs reconciliation while the server went back in time (`MetaKey.reconcile`): queues
    /// and pushes what this device may bring back, checks again, and ends the reconciliation
    /// once the server holds everything this device holds. Records only another member can
    /// bring back are counted (`MetaKey.reconcileWaiting`), and the reconciliation stays on.
    func reconcileIfNeeded(into report: inout Report) throws {
        guard try store.reconcileNeeded(), try store.phase() == .shared, try store.attention() == nil, try pairedChild() == nil else { return }
        for _ in 0..<3 {
            let outcome = try reconcile()
            report.reconciled += outcome.queued
            if outcome.queued > 0 {
                try push(into: &report)
                continue
            }
            try store.transaction {
                if outcome.waiting == 0 {
                    try store.set(.reconcile, nil)
                    try store.set(.reconcileWaiting, nil)
                    try store.set(.ownerRestore, nil)
                } else {
                    try store.set(.reconcileWaiting, String(outcome.waiting))
                }
            }
            return
        }
    }
}

extension SyncEngine {
    /// Starts the owner's restore from this device: a reconciliation that pushes every record
    /// the server lacks, other members' in their names (`MetaKey.ownerRestore`).
    func beginOwnerRestore() throws {
        try StoreFailure.mapping {
            try store.transaction {
                try store.set(.ownerRestore, "1")
                try store.set(.reconcile, "1")
            }
        }
    }
}

extension Array {
    /// The array cut into runs of at most `size` elements.
    func chunked(_ size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
