import LedgerModel

extension SyncEngine {
    /// Pushes the queue in batches, each record read in its current state. Stops when the
    /// queue is empty, frozen, or a round made no progress (conflicts that keep losing).
    /// Returns true when the queue is empty at the end.
    ///
    /// Every result is applied with compare-and-set on the queue entry's version, so a second
    /// engine on the same file (another process) pushing or editing meanwhile never loses a
    /// newer edit or has an older answer overwrite a newer one.
    @discardableResult
    func push(into report: inout Report) throws -> Bool {
        if try store.attention() != nil || store.household().permission == .readOnly {
            return try store.pendingCount() == 0
        }
        // A child's device uploads its requests through its child's request route, and nothing else.
        if let child = try pairedChild() { return try pushChildRequests(childId: child, into: &report) }
        var stalledRounds = 0
        while stalledRounds < 3 {
            try checkCancelled()
            let before = try store.pendingCount()
            // One place left for the other half of a transfer cut off by the limit.
            var batch = try store.pendingBatch(limit: pushBatchSize - 1)
            let householdId = try store.household().id
            if batch.isEmpty { return true }
            if let last = batch.last, last.kind == .transaction, let partner = try store.transferPartner(of: last.id),
               !batch.contains(where: { $0.kind == .transaction && $0.id == partner }),
               let version = try store.pendingVersion(.transaction, id: partner) {
                batch.append(PendingChange(kind: .transaction, id: partner, version: version))
            }
            var request = Wire.PushRequest(children: [], transactions: [])
            // The owner's restore from this device: other members' records keep their authors.
            let me = try store.string(.accountId)
            if try store.string(.ownerRestore) != nil { request.ownerRestore = true }
            for change in batch {
                switch change.kind {
                case .child:
                    if let c = try store.child(id: change.id) { request.children.append(Wire.PushChild(c)) }
                    else { try store.dequeue(.child, id: change.id, ifVersion: change.version) }
                case .pot:
                    if let p = try store.pot(id: change.id) { request.pots.append(Wire.Pot(p)) }
                    else { try store.dequeue(.pot, id: change.id, ifVersion: change.version) }
                case .schedule:
                    if let s = try store.schedule(id: change.id) { request.schedules.append(Wire.Schedule(s)) }
                    else { try store.dequeue(.schedule, id: change.id, ifVersion: change.version) }
                case .request:
                    if let r = try store.request(id: change.id) { request.requests.append(Wire.Request(r)) }
                    else { try store.dequeue(.request, id: change.id, ifVersion: change.version) }
                case .transaction:
                    if let t = try store.transaction(id: change.id) {
                        var record = Wire.PushTransaction(t)
                        if request.ownerRestore == true, let author = t.authorAccountId, author != me { record.authorAccountId = author }
                        request.transactions.append(record)
                    }
                    else { try store.dequeue(.transaction, id: change.id, ifVersion: change.version) }
                }
            }
            // A transaction waits for its pot to reach the server (a transfer's two halves together).
            let pendingPots = Set(try store.pendingIds(.pot))
            request = try request.holdingBack(pots: pendingPots.subtracting(request.pots.map(\.id)), store: store)
            // An approval's payment is the server's to write when it takes the decision.
            let held = try heldPayments()
            if !held.isEmpty { request.transactions.removeAll { held.contains($0.id) } }
            if !request.isEmpty {
                let api = self.api
                let sent = request
                var refused: APIError?
                var results: [Wire.PushResult] = []
                do throws(APIError) {
                    results = try retrying { () throws(APIError) in try api.push(householdId: householdId, sent) }
                } catch {
                    refused = error
                }
                if let refused {
                    // A server without pots refuses the whole batch: push the rest, keep the pots
                    // and what names them queued for a server that has them.
                    guard refused.status == 422, !request.pots.isEmpty else { throw refused }
                    request = try request.holdingBack(pots: pendingPots, store: store)
                    request.pots = []
                    if request.isEmpty { return false }
                    let reduced = request
                    results = try retrying { () throws(APIError) in try api.push(householdId: householdId, reduced) }
                }
                var events: [SyncEvent] = []
                try store.transaction {
                    let versions = Dictionary(batch.map { ("\($0.kind.rawValue):\($0.id)", $0.version) }, uniquingKeysWith: max)
                    for result in results {
                        let kind = RecordKind(rawValue: result.type) ?? .transaction
                        let id = result.id.lowercased()
                        guard let version = versions["\(kind.rawValue):\(id)"] else { continue }
                        try apply(result, kind: kind, id: id, version: version, report: &report, events: &events)
                    }
                }
                emit(events)
                report.pushed += request.children.count + request.transactions.count + request.schedules.count + request.pots.count
                    + request.requests.count
            }
            let after = try store.pendingCount()
            stalledRounds = after < before ? 0 : stalledRounds + 1
        }
        return try store.pendingCount() == 0
    }

    /// Applies one push result for the record pushed at queue `version`. Call inside a store
    /// transaction.
    private func apply(_ result: Wire.PushResult, kind: RecordKind, id: String, version: Int64,
                       report: inout Report, events: inout [SyncEvent]) throws {
        // Settled already (another engine on this file applied the same answer): nothing to do.
        guard let current = try store.pendingVersion(kind, id: id), current >= version else { return }
        // False when the record was edited again after this batch was read.
        let unchanged = current == version
        switch (kind, result.status) {
        case (.child, "saved"), (.child, "unchanged"):
            if let tag = result.changeTag { try store.setChangeTag(childId: id, tag) }
            try store.dequeue(.child, id: id, ifVersion: version)
        case (.child, "conflict"):
            report.conflicts += 1
            guard case .child(let wire)? = result.serverRecord else {
                // No server copy: the id belongs to another household. Keep the record aside
                // instead of retrying it forever.
                report.rejected += 1
                return try reject(kind: .child, id: id, code: "id_conflict", detail: result.detail, events: &events)
            }
            guard let server = wire.record(), let local = try store.child(id: id) else { return }
            try store.noteSeen(modifiedAt: server.modifiedAt)
            if LWW.wins((local.modifiedAt, local.modifiedBy), over: (server.modifiedAt, server.modifiedBy)) {
                // Ours is newer: push it again on top of the server's version.
                try store.setChangeTag(childId: id, server.changeTag ?? result.changeTag)
            } else {
                // Decided on the current local state (read in this transaction), so the entry
                // goes whatever its version.
                try store.upsert(server)
                try store.dequeue(.child, id: id)
            }
        case (.pot, "saved"), (.pot, "unchanged"):
            if let tag = result.changeTag { try store.setChangeTag(potId: id, tag) }
            try store.dequeue(.pot, id: id, ifVersion: version)
        case (.schedule, "saved"), (.schedule, "unchanged"):
            if let tag = result.changeTag { try store.setChangeTag(scheduleId: id, tag) }
            if unchanged { try store.clearBackPay(scheduleId: id) }
            try store.dequeue(.schedule, id: id, ifVersion: version)
        case (.request, "saved"), (.request, "unchanged"):
            if let tag = result.changeTag { try store.setChangeTag(requestId: id, tag) }
            if let local = try store.request(id: id), local.status == .approved {
                // The server wrote the payment with the decision (the same id): its copy
                // arrives with the feed; this device's is not uploaded.
                try store.dequeue(.transaction, id: local.paymentId ?? RequestRecord.paymentId(of: id))
            }
            try store.dequeue(.request, id: id, ifVersion: version)
        case (.pot, "conflict"), (.schedule, "conflict"), (.request, "conflict"):
            report.conflicts += 1
            switch result.serverRecord {
            case .pot(let wire)?: try mergePot(wire, pending: true)
            case .schedule(let wire)?: try mergeSchedule(wire, pending: true)
            case .request(let wire)?: try mergeRequest(wire, pending: true)
            default:
                report.rejected += 1
                return try reject(kind: kind, id: id, code: "id_conflict", detail: result.detail, events: &events)
            }
        case (.transaction, "saved"), (.transaction, "unchanged"):
            try store.dequeue(.transaction, id: id, ifVersion: version)
        case (.transaction, "conflict"):
            // Same id, other content (two devices undid the same item): the server's copy wins.
            report.conflicts += 1
            guard case .transaction(let wire)? = result.serverRecord else {
                // No server copy: the id belongs to another household. Dropping it from the
                // queue would leave a balance the server never sees; keep it aside instead.
                report.rejected += 1
                return try reject(kind: .transaction, id: id, code: "id_conflict", detail: result.detail, events: &events)
            }
            if let server = wire.record() { try store.upsert(server) }
            try store.dequeue(.transaction, id: id)
        case (_, "rejected"):
            // A child edited again since may be accepted in its new form: push that instead.
            guard unchanged || kind == .transaction else { return }
            report.rejected += 1
            try reject(kind: kind, id: id, code: result.code ?? "rejected", detail: result.detail, events: &events)
        default:
            break
        }
    }

    /// Sets a refused record aside: kept as a rejected change with its reason (see
    /// `RejectedRecord`), off the queue, and for a transaction out of the balances (with its
    /// reversal, which the server cannot hold either).
    func reject(kind: RecordKind, id: String, code: String, detail: String?, events: inout [SyncEvent]) throws {
        let why = detail ?? Self.rejectionDetail(code: code)
        switch kind {
        case .transaction:
            if let t = try store.transaction(id: id) {
                try store.markRejected(.transaction, id: id, code: code, detail: why, json: Wire.Transaction(t).jsonText(), now: now())
                if let reversal = try store.reversal(of: id) {
                    try reject(kind: .transaction, id: reversal.id, code: "unknown_transaction", detail: nil, events: &events)
                }
                try store.deleteTransaction(id: id)
            }
        case .child:
            if let c = try store.child(id: id) {
                try store.markRejected(.child, id: id, code: code, detail: why, json: Wire.PushChild(c).jsonText(), now: now())
            }
        case .pot:
            if let p = try store.pot(id: id) {
                try store.markRejected(.pot, id: id, code: code, detail: why, json: Wire.Pot(p).jsonText(), now: now())
            }
        case .request:
            if var r = try store.request(id: id) {
                try store.markRejected(.request, id: id, code: code, detail: why, json: Wire.Request(r).jsonText(), now: now())
                if r.status != .pending {
                    // A decision the server refused: the request is pending again here, as asked
                    // and without its payment.
                    try dropPayment(of: r, decided: nil)
                    r.status = .pending
                    r.amountCents = r.requestedCents
                    r.decidedBy = nil; r.decidedAt = nil; r.decisionNote = nil; r.paymentId = nil
                    try store.upsert(r)
                }
            }
        case .schedule:
            if var s = try store.schedule(id: id) {
                try store.markRejected(.schedule, id: id, code: code, detail: why, json: Wire.Schedule(s).jsonText(), now: now())
                // The shared ledger does not hold it: it stops paying here too.
                s.deleted = true
                try store.upsert(s)
            }
        }
        try store.dequeue(kind, id: id)
        if let record = try store.rejectedChanges().first(where: { $0.kind == kind && $0.id == id }) {
            events.append(.rejected(record))
        }
    }

    /// A sentence for a rejection code the server sent without a detail.
    static func rejectionDetail(code: String) -> String {
        switch code {
        case "unknown_child": return "The child it belongs to is not in the shared ledger."
        case "unknown_transaction": return "The transaction it undoes is not in the shared ledger."
        case "reversal_id_mismatch", "reversal_amount_mismatch": return "It does not match the transaction it undoes."
        case "not_reversible": return "That transaction was already undone, or is itself an undo."
        case "balance_overflow": return "It would take the balance beyond what can be stored."
        case "validation_failed": return "The server found it invalid."
        case "modified_by_mismatch", "attribution_mismatch": return "It was attributed to another account."
        case "clock_skew": return "It was dated too far in the future; check the device's clock."
        case "id_conflict": return "Its id belongs to another household."
        default: return "The server refused it (\(code))."
        }
    }
}

extension Wire.PushRequest {
    /// The request without the transactions in `pots` (and the other half of each such
    /// transfer made on this device).
    func holdingBack(pots: Set<String>, store: LedgerStore) throws -> Wire.PushRequest {
        guard !pots.isEmpty else { return self }
        var held = Set(transactions.filter { $0.potId.map(pots.contains) ?? false }.map(\.id))
        guard !held.isEmpty else { return self }
        for id in held { if let partner = try store.transferPartner(of: id) { held.insert(partner) } }
        var copy = self
        copy.transactions.removeAll { held.contains($0.id) }
        return copy
    }
}
