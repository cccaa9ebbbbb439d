import LedgerModel

/// Requests in the sync: merging the server's version, a child's device uploading its own
/// requests, and what happens to a decision the server did not take.
///
/// The rule for decisions (the same on every replica): **the first decision to reach the
/// server stands.** A later one — an approval after a decline, a decline after an approval, a
/// second approval — is answered with the server's request, which the device adopts; a
/// payment it wrote for a losing approval is dropped before it is ever uploaded (an approval's
/// payment is held back until its decision was taken). Two approvals write the same payment id,
/// so the one the server holds is the only one anywhere.
extension SyncEngine {
    /// The child this device is paired to, or nil on a parent's device.
    func pairedChild() throws -> String? {
        try store.string(.childModeChildId)
    }

    /// Merges the server's version of a request. `pending`: the server answered a push of ours
    /// with it. A local decision not yet taken by the server stays over a server version that
    /// is still pending; a decided server version wins. Returns false when it is malformed.
    @discardableResult
    func mergeRequest(_ wire: Wire.Request, pending: Bool = false) throws -> Bool {
        guard let server = wire.record() else { return false }
        if let local = try store.request(id: server.id), try pending || store.pendingVersion(.request, id: server.id) != nil {
            if server.status == .pending {
                // Ours (a new request, or a decision) goes up on top of this version.
                try store.setChangeTag(requestId: server.id, server.changeTag)
                return true
            }
            try dropPayment(of: local, decided: server)
        }
        try store.upsert(server)
        try store.dequeue(.request, id: server.id)
        return true
    }

    /// Drops the queued payment of a local approval that lost to the server's decision (an
    /// approval there too pays with the same id: the upload or the feed settles it).
    func dropPayment(of local: RequestRecord, decided server: RequestRecord?) throws {
        guard local.status == .approved, server?.status != .approved else { return }
        let payment = local.paymentId ?? RequestRecord.paymentId(of: local.id)
        guard try store.pendingVersion(.transaction, id: payment) != nil else { return }
        try store.deleteTransaction(id: payment)
        try store.dequeue(.transaction, id: payment)
    }

    /// The payments of queued decisions: held back until their decision is taken.
    func heldPayments() throws -> Set<String> {
        var held = Set<String>()
        for id in try store.pendingIds(.request) {
            if let r = try store.request(id: id), r.status == .approved { held.insert(r.paymentId ?? RequestRecord.paymentId(of: id)) }
        }
        return held
    }

    /// A child's device uploads its new requests one by one through the child's request route
    /// (the one write its token may make). Returns true when nothing is left queued.
    func pushChildRequests(childId: String, into report: inout Report) throws -> Bool {
        let householdId = try store.household().id
        for change in try store.pendingBatch(limit: pushBatchSize) {
            try checkCancelled()
            guard change.kind == .request, let local = try store.request(id: change.id) else {
                // Nothing else is made on a child's device.
                try store.dequeue(change.kind, id: change.id, ifVersion: change.version)
                continue
            }
            let api = self.api
            let sent = Wire.Request(local)
            var events: [SyncEvent] = []
            let answer: Wire.Request
            do throws(APIError) {
                answer = try retrying { () throws(APIError) in try api.createRequest(householdId: householdId, sent) }
            } catch {
                // Only a refusal of this request sets it aside; anything about the device or the
                // server (offline, signed out, the child gone) ends the sync as usual.
                guard case .problem(let status, let code, let detail, _, _) = error, status != 401, status != 404,
                      !error.isTransient else { throw error }
                try store.transaction {
                    try reject(kind: .request, id: local.id, code: code, detail: detail, events: &events)
                }
                report.rejected += 1
                emit(events)
                continue
            }
            try store.transaction {
                if var server = answer.record(), server.id == local.id {
                    if server.childId != childId { server.childId = childId }
                    try store.upsert(server)
                }
                try store.dequeue(.request, id: local.id, ifVersion: change.version)
            }
            report.pushed += 1
        }
        return try store.pendingCount() == 0
    }
}
