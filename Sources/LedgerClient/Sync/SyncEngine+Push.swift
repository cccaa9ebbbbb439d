import LedgerModel

extension SyncEngine {
    /// Pushes the queue in batches, each record read in its current state. Stops when the
    /// queue is empty, frozen, or a round made no progress (conflicts that keep losing).
    func push(into report: inout Report) throws(APIError) {
        let frozen: Bool
        do { frozen = try store.attention() != nil || store.household().permission == "readOnly" } catch {
            throw .invalidAnswer("store: \(error)")
        }
        if frozen { return }
        var stalledRounds = 0
        while stalledRounds < 3 {
            let before: Int
            let batch: [PendingChange]
            let householdId: String
            do {
                before = try store.pendingCount()
                batch = try store.pendingBatch(limit: pushBatchSize)
                householdId = try store.household().id
            } catch { throw .invalidAnswer("store: \(error)") }
            if batch.isEmpty { return }
            var request = Wire.PushRequest(children: [], transactions: [])
            do {
                for change in batch {
                    switch change.kind {
                    case .child:
                        if let c = try store.child(id: change.id) { request.children.append(Wire.PushChild(c)) }
                        else { try store.dequeue(.child, id: change.id) }
                    case .transaction:
                        if let t = try store.transaction(id: change.id) { request.transactions.append(Wire.PushTransaction(t)) }
                        else { try store.dequeue(.transaction, id: change.id) }
                    }
                }
            } catch { throw .invalidAnswer("store: \(error)") }
            if request.children.isEmpty && request.transactions.isEmpty { continue }
            let api = self.api
            let results = try retry.run { () throws(APIError) in try api.push(householdId: householdId, request) }
            do {
                try store.transaction {
                    let versions = Dictionary(batch.map { ("\($0.kind.rawValue):\($0.id)", $0.version) }, uniquingKeysWith: max)
                    for result in results {
                        let kind: RecordKind = result.type == "child" ? .child : .transaction
                        let id = result.id.lowercased()
                        guard let version = versions["\(kind.rawValue):\(id)"] else { continue }
                        try apply(result, kind: kind, id: id, version: version, report: &report)
                    }
                }
            } catch { throw .invalidAnswer("store: \(error)") }
            report.pushed += request.children.count + request.transactions.count
            let after: Int
            do { after = try store.pendingCount() } catch { throw .invalidAnswer("store: \(error)") }
            stalledRounds = after < before ? 0 : stalledRounds + 1
        }
    }

    private func apply(_ result: Wire.PushResult, kind: RecordKind, id: String, version: Int64,
                       report: inout Report) throws {
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
                return try reject(kind: .child, id: id, code: "id_conflict")
            }
            guard let server = wire.record(), let local = try store.child(id: id) else { return }
            try store.noteSeen(modifiedAt: server.modifiedAt)
            if LWW.wins((local.modifiedAt, local.modifiedBy), over: (server.modifiedAt, server.modifiedBy)) {
                // Ours is newer: push it again on top of the server's version.
                try store.setChangeTag(childId: id, server.changeTag ?? result.changeTag)
            } else {
                try store.upsert(server)
                try store.dequeue(.child, id: id)
            }
        case (.transaction, "saved"), (.transaction, "unchanged"):
            try store.dequeue(.transaction, id: id)
        case (.transaction, "conflict"):
            // Same id, other content (two devices undid the same item): the server's copy wins.
            report.conflicts += 1
            guard case .transaction(let wire)? = result.serverRecord else {
                // No server copy: the id belongs to another household. Dropping it from the
                // queue would leave a balance the server never sees; keep it aside instead.
                report.rejected += 1
                return try reject(kind: .transaction, id: id, code: "id_conflict")
            }
            if let server = wire.record() { try store.upsert(server) }
            try store.dequeue(.transaction, id: id)
        case (_, "rejected"):
            report.rejected += 1
            try reject(kind: kind, id: id, code: result.code ?? "rejected")
        default:
            break
        }
    }

    /// Sets a refused record aside: kept in `rejected`, out of the balances, off the queue.
    func reject(kind: RecordKind, id: String, code: String) throws {
        switch kind {
        case .transaction:
            if let t = try store.transaction(id: id) {
                try store.markRejected(.transaction, id: id, code: code, json: Wire.Transaction(t).jsonText(), now: now())
                if let reversal = try store.reversal(of: id) {
                    try reject(kind: .transaction, id: reversal.id, code: "unknown_transaction")
                }
                try store.db.run("DELETE FROM transactions WHERE id = ?", [.text(id)])
            }
        case .child:
            if let c = try store.child(id: id) {
                try store.markRejected(.child, id: id, code: code, json: Wire.PushChild(c).jsonText(), now: now())
            }
        }
        try store.dequeue(kind, id: id)
    }
}
